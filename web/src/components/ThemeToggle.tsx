import { useState } from 'react';

type Theme = 'light' | 'dark' | 'system';
const KEY = 'slipway.theme';
const read = (): Theme => (localStorage.getItem(KEY) as Theme | null) ?? 'system';

/** Sets the chosen theme on <html> (the stylesheet follows the system's otherwise). */
export function applyTheme(theme: Theme = read()) {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

export function ThemeToggle() {
  const [theme, setTheme] = useState(read);
  const next: Record<Theme, Theme> = { system: 'light', light: 'dark', dark: 'system' };
  return (
    <button
      type="button"
      className="ghost"
      aria-label={`Theme: ${theme}. Switch to ${next[theme]}`}
      onClick={() => {
        const chosen = next[theme];
        localStorage.setItem(KEY, chosen);
        applyTheme(chosen);
        setTheme(chosen);
      }}
    >
      {theme === 'dark' ? '☾' : theme === 'light' ? '☀' : '◐'} <span className="hide-narrow">{theme}</span>
    </button>
  );
}
