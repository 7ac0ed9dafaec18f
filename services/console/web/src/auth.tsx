// Whether the services want an API key (AUTH_MODE=token or jwt) and, if so, the login box that asks for one. The key
// is checked against an endpoint that always needs it (GET /exports) and kept in sessionStorage for this tab only.
import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { Button, Center, Code, Loader, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { apiKey, request, setUnauthorizedHandler } from './api/client.ts';
import { ErrorAlert } from './components/ErrorAlert.tsx';

export type AuthState = { state: 'checking' } | { state: 'signed-out'; message?: string } | { state: 'ready'; usesKey: boolean };

/** The services' verdict on the current key (or on none): usable, or the sentence of their 401. */
async function check(): Promise<AuthState> {
  const usesKey = apiKey.get() !== null;
  try {
    await request('export', '/exports');
    return { state: 'ready', usesKey };
  } catch (err) {
    // Without a key the box just asks for one; a refused key gets the service's sentence.
    if ((err as { status?: number }).status === 401) return { state: 'signed-out', ...(usesKey ? { message: (err as Error).message } : {}) };
    // Anything else (a service down) is shown by the pages themselves; the console stays usable.
    return { state: 'ready', usesKey };
  }
}

export function useAuth() {
  const [auth, setAuth] = useState<AuthState>({ state: 'checking' });
  useEffect(() => {
    setUnauthorizedHandler((message) => {
      apiKey.clear();
      setAuth({ state: 'signed-out', message });
    });
    void check().then(setAuth);
  }, []);
  const signIn = useCallback(async (key: string) => {
    apiKey.set(key);
    const result = await check();
    if (result.state !== 'ready') apiKey.clear();
    setAuth(result);
  }, []);
  const signOut = useCallback(() => {
    apiKey.clear();
    setAuth({ state: 'signed-out' });
  }, []);
  return { auth, signIn, signOut };
}

export function LoginBox({ message, onSignIn }: { message?: string | undefined; onSignIn: (key: string) => Promise<void> }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      await onSignIn(key.trim());
    } finally {
      setBusy(false);
    }
  };
  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" radius="md" w={420} maw="100%" component="form" onSubmit={(e) => void submit(e)}>
        <Stack>
          <Title order={1} size="h3">
            Fine-tuning console
          </Title>
          <Text size="sm" c="dimmed">
            The services ask for an API key. It stays in this browser tab only and is forgotten when the tab closes. The
            first start prints one; <Code>pnpm keys create &lt;user&gt;</Code> makes more.
          </Text>
          <ErrorAlert message={message} title="Not signed in" />
          <PasswordInput label="API key" value={key} onChange={(e) => setKey(e.currentTarget.value)} required autoFocus autoComplete="off" />
          <Button type="submit" loading={busy} disabled={!key.trim()}>
            Sign in
          </Button>
        </Stack>
      </Paper>
    </Center>
  );
}

export function Checking() {
  return (
    <Center mih="100vh">
      <Loader aria-label="connecting to the services" />
    </Center>
  );
}
