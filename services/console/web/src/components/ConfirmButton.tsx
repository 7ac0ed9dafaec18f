// A button for something that cannot be undone (delete): it asks first, in a dialog the keyboard can answer.
import { useState, type ReactNode } from 'react';
import { Button, Group, Modal, Text, type ButtonProps } from '@mantine/core';

interface ConfirmButtonProps extends ButtonProps {
  question: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<void> | void;
  children: ReactNode;
}

export function ConfirmButton({ question, confirmLabel, onConfirm, children, ...buttonProps }: ConfirmButtonProps) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    try {
      await onConfirm();
    } finally {
      setBusy(false);
      setOpen(false);
    }
  };
  return (
    <>
      <Button color="red" variant="light" {...buttonProps} onClick={() => setOpen(true)}>
        {children}
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title="Are you sure?" centered>
        <Text size="sm">{question}</Text>
        <Group justify="flex-end" mt="md">
          <Button variant="default" onClick={() => setOpen(false)}>
            Keep it
          </Button>
          <Button color="red" loading={busy} onClick={() => void confirm()} data-autofocus>
            {confirmLabel}
          </Button>
        </Group>
      </Modal>
    </>
  );
}
