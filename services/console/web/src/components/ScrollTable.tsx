// A table with a header row that scrolls sideways on narrow screens instead of widening the page.
import type { ReactNode } from 'react';
import { ScrollArea, Table, type TableProps } from '@mantine/core';

interface ScrollTableProps extends TableProps {
  /** The table's accessible name. */
  label: string;
  headers: ReactNode[];
  /** Below this width (px) the table scrolls. */
  minWidth: number;
  children: ReactNode;
}

export function ScrollTable({ label, headers, minWidth, children, ...tableProps }: ScrollTableProps) {
  return (
    <ScrollArea type="auto">
      <Table aria-label={label} miw={minWidth} {...tableProps}>
        <Table.Thead>
          <Table.Tr>
            {headers.map((header, i) => (
              <Table.Th key={i}>{header}</Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>{children}</Table.Tbody>
      </Table>
    </ScrollArea>
  );
}
