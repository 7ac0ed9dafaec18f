# step WHAT COMMAND...: runs a setup step that takes a second when nothing changed and minutes on a fresh machine.
# Quick, it says nothing; past 3 s it says what it does, then every 10 s how long so far, and how long it took.
# Sourced by bootstrap.sh; its lines go to stderr, prefixed with the caller's name.
step() {
  local what=$1
  shift
  local started=$SECONDS status=0
  # The ticker's sleeps hold no output open: killed, the ticker may leave one behind, which must not keep a pipe
  # reading this script's output waiting.
  (
    sleep 3 >/dev/null 2>&1
    echo "${0##*/}: $what…" >&2
    while sleep 10 >/dev/null 2>&1; do echo "${0##*/}: $what: $((SECONDS - started)) s so far" >&2; done
  ) &
  local ticker=$!
  "$@" || status=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  if ((SECONDS - started >= 3)); then echo "${0##*/}: $what: done in $((SECONDS - started)) s" >&2; fi
  return "$status"
}
