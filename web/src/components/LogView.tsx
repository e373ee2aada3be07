import Anser from 'anser';
import { memo, useEffect, useRef } from 'react';
import { label, type LogEntry } from '../lib/log-tail';
import { time } from '../lib/format';

/** One line, its ANSI colours as classes (anser): no inline styles, which the Content-Security-Policy forbids. */
const Line = memo(function Line({ entry, showInstance }: { entry: LogEntry; showInstance: boolean }) {
  const parts = Anser.ansiToJson(entry.message, { use_classes: true, remove_empty: true });
  const level = label(entry, 'level');
  return (
    <div className={`log-line ${level === 'error' ? 'level-error' : level === 'warning' ? 'level-warn' : ''}`}>
      <time dateTime={entry.timestamp}>{time(entry.timestamp)}</time>
      {showInstance && <span className="instance">{label(entry, 'instance')?.slice(-6) ?? ''}</span>}
      <span className="message">
        {parts.map((part, i) => {
          const classes = [
            part.fg, // anser's class name (ansi-red, ansi-palette-208)
            part.bg && `bg-${part.bg}`,
            ...part.decorations.map((d) => `ansi-${d}`),
          ]
            .filter(Boolean)
            .join(' ');
          return classes ? (
            <span key={i} className={classes}>
              {part.content}
            </span>
          ) : (
            part.content
          );
        })}
      </span>
    </div>
  );
});

/** A scrolling log that follows new lines while the reader is at the bottom, and stays put when they scrolled up. */
export function LogView(props: { entries: LogEntry[]; label: string; showInstance?: boolean; empty?: string }) {
  const box = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  useEffect(() => {
    const el = box.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [props.entries]);
  return (
    <div
      ref={box}
      className="log"
      role="log"
      aria-label={props.label}
      aria-live="off"
      tabIndex={0}
      onScroll={(e) => {
        const el = e.currentTarget;
        pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      }}
    >
      {props.entries.length === 0 ? (
        <p className="empty">{props.empty ?? 'No lines yet.'}</p>
      ) : (
        props.entries.map((entry) => <Line key={entry.id} entry={entry} showInstance={!!props.showInstance} />)
      )}
    </div>
  );
}
