import { useState } from 'react';

/** Render's cursor pages: the cursor of each page before this one, so that "back" is a step, not a new query. */
export function useCursorPages() {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    cursor: cursors.at(-1),
    back: cursors.length > 0 ? () => setCursors(cursors.slice(0, -1)) : undefined,
    forward: (lastCursor: string) => setCursors([...cursors, lastCursor]),
  };
}

export function Pager(props: {
  pages: ReturnType<typeof useCursorPages>;
  rows: Array<{ cursor: string }>;
  size: number;
  labels?: [string, string];
}) {
  const [back, forward] = props.labels ?? ['Previous', 'Next'];
  const last = props.rows.at(-1);
  return (
    <div className="row">
      {props.pages.back && (
        <button type="button" onClick={props.pages.back}>
          {back}
        </button>
      )}
      {last && props.rows.length === props.size && (
        <button type="button" onClick={() => props.pages.forward(last.cursor)}>
          {forward}
        </button>
      )}
    </div>
  );
}
