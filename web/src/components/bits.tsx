import { useRef, useState, type ReactNode } from 'react';

/** The API's own message, where a page shows an error. */
export function ErrorText({ error }: { error: Error | null | undefined }) {
  if (!error) return null;
  return (
    <p role="alert" className="error">
      {error.message}
    </p>
  );
}

const TONE: Record<string, string> = {
  live: 'good',
  available: 'good',
  succeeded: 'good',
  verified: 'good',
  issued: 'good',
  not_suspended: 'good',
  build_failed: 'bad',
  update_failed: 'bad',
  pre_deploy_failed: 'bad',
  failed: 'bad',
  unavailable: 'bad',
  canceled: 'muted',
  deactivated: 'muted',
  suspended: 'muted',
};

/** A status as a badge: green when good, red when failed, amber while in progress. */
export function StatusBadge({ status }: { status: string | null | undefined }) {
  const value = status ?? 'unknown';
  return <span className={`badge ${TONE[value] ?? 'busy'}`}>{value.replace(/_/g, ' ')}</span>;
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="small"
      onClick={() =>
        void navigator.clipboard.writeText(text).then(() => {
          setCopied(true);
          setTimeout(() => setCopied(false), 1500);
        })
      }
    >
      {copied ? 'Copied' : label}
    </button>
  );
}

/**
 * A button whose action is asked for again in a modal <dialog> (focus kept inside, Escape cancels): every action
 * that changes a running service or deletes something goes through one.
 */
export function ConfirmButton(props: {
  label: string;
  question: ReactNode;
  confirm?: string;
  danger?: boolean;
  disabled?: boolean;
  onConfirm: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button
        type="button"
        className={props.danger ? 'danger' : undefined}
        disabled={props.disabled}
        onClick={() => dialog.current?.showModal()}
      >
        {props.label}
      </button>
      <dialog ref={dialog} aria-label={props.label}>
        <form
          method="dialog"
          onSubmit={(e) => {
            if ((e.nativeEvent as SubmitEvent).submitter?.getAttribute('value') === 'yes') props.onConfirm();
          }}
        >
          <p>{props.question}</p>
          <div className="row end">
            <button value="no" autoFocus>
              Cancel
            </button>
            <button value="yes" className={props.danger ? 'danger' : 'primary'}>
              {props.confirm ?? props.label}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** A form whose submit runs `onSubmit` instead of navigating (the browser still checks `required`, `pattern`, …). */
export function ActionForm({
  onSubmit,
  className,
  children,
}: {
  onSubmit: () => void;
  className?: string;
  children: ReactNode;
}) {
  return (
    <form
      className={className}
      onSubmit={(e) => {
        e.preventDefault();
        onSubmit();
      }}
    >
      {children}
    </form>
  );
}
