// The frame of every page: a header with the sign-out button and the navigation, which folds under a burger on
// narrow screens.
import type { ReactNode } from 'react';
import { AppShell, Burger, Button, Group, NavLink, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useLocation } from 'wouter';

const SECTIONS = [
  { href: '/datasets', label: 'Datasets' },
  { href: '/training', label: 'Training' },
  { href: '/sweeps', label: 'Sweeps' },
  { href: '/compare', label: 'Compare' },
  { href: '/playground', label: 'Playground' },
  { href: '/evaluation', label: 'Evaluation' },
  { href: '/exports', label: 'Exports' },
  { href: '/workers', label: 'Workers' },
  { href: '/webhooks', label: 'Webhooks' },
];

export function Shell({ children, onSignOut }: { children: ReactNode; onSignOut?: (() => void) | undefined }) {
  const [opened, { toggle, close }] = useDisclosure();
  const [location, navigate] = useLocation();
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 200, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md" mode="static">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Show the navigation" />
            <Title order={1} size="h4">
              Fine-tuning console
            </Title>
          </Group>
          {onSignOut && (
            <Button variant="subtle" size="compact-sm" onClick={onSignOut}>
              Sign out
            </Button>
          )}
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" component="nav" aria-label="Sections">
        {SECTIONS.map((section) => (
          <NavLink
            key={section.href}
            href={section.href}
            label={section.label}
            active={location === section.href || location.startsWith(`${section.href}/`)}
            onClick={(event) => {
              event.preventDefault();
              navigate(section.href);
              close();
            }}
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>{children}</AppShell.Main>
    </AppShell>
  );
}
