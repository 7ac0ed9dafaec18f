import sys

from .cli import main
from .lean_imports import for_command
from .parent_watch import start_parent_watch

# serve and tinker-session read their requests from stdin and exit when it closes; the watch would consume them.
if sys.argv[1:2] not in (["serve"], ["tinker-session"]):
    start_parent_watch()
# One command, then the process exits: the only place a command may shape how libraries import (cli.main also runs
# several commands in one process for scripts, where a gguf's setting would outlive it).
for_command(sys.argv[1] if len(sys.argv) > 1 else "")
sys.exit(main())
