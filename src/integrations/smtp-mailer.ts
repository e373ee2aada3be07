import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';

/** One email, to every address in `to`. */
export interface Mail {
  to: string[];
  subject: string;
  text: string;
}
/** The email port: core's notification dispatcher only sees this. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
}

/**
 * nodemailer over SMTP (`smtpUrl`: smtp://user:pass@host:port, smtps:// for TLS from the start), one connection per
 * message, every phase under `timeoutMs`: a slow server holds one send slot, never the dispatcher. Errors carry the
 * server's answer, never the URL or its password.
 */
export function createSmtpMailer(options: { smtpUrl: string; from: string; timeoutMs: number }): Mailer {
  const transport = nodemailer.createTransport({
    url: options.smtpUrl,
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
    dnsTimeout: options.timeoutMs,
    logger: false,
    debug: false,
  } satisfies SMTPTransport.Options);
  return {
    async send(mail) {
      // nodemailer's timeouts cover each phase; this bounds the whole exchange (a server that trickles its answers).
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`SMTP send took over ${2 * options.timeoutMs} ms`)),
          2 * options.timeoutMs,
        );
      });
      try {
        await Promise.race([
          transport.sendMail({ from: options.from, to: mail.to, subject: mail.subject, text: mail.text }),
          timeout,
        ]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
