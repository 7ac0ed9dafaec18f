// A text input that holds code (JSON, Python): the typed text in the monospace font, the label and description in the
// form's own. Mantine's `ff` prop sets the whole field's font, label included (#39: "Graders" read in monospace).
export const CODE_INPUT = { input: { fontFamily: 'var(--mantine-font-family-monospace)' } } as const;
