// An error as the API said it, announced to screen readers (role=alert).
import { Alert } from '@mantine/core';

export function ErrorAlert({ message, title = 'The request failed' }: { message: string | undefined; title?: string }) {
  if (!message) return null;
  return (
    <Alert color="red" title={title} role="alert" variant="light">
      {message}
    </Alert>
  );
}
