/**
 * The slice of the `vscode` API the extension's modules touch outside the language
 * client, recorded so tests can look: status bar items, configuration, the active editor.
 */

type Listener<T> = (value: T) => void;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    this.listeners.forEach((listener) => listener(value));
  }
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class MarkdownString {
  isTrusted = false;
  supportThemeIcons = false;
  constructor(public value = '') {}
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
    private readonly text: string,
  ) {}
  static parse(text: string): Uri {
    const scheme = text.split(':')[0];
    return new Uri(scheme, decodeURIComponent(text.replace(/^file:\/\//, '')), text);
  }
  static file(path: string): Uri {
    return new Uri('file', path, `file://${path}`);
  }
  toString(): string {
    return this.text;
  }
}

export class StatusBarItem {
  text = '';
  tooltip: string | MarkdownString | undefined;
  command: string | { command: string; title?: string; arguments?: unknown[] } | undefined;
  name: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible = false;
  disposed = false;
  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
    readonly priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.disposed = true;
  }
}

const activeEditorChanged = new EventEmitter<unknown>();

/** What the tests arrange and inspect. */
export const mock = {
  statusBarItems: [] as StatusBarItem[],
  /** `section.key` → value, per scope (`''` for the global scope). */
  configuration: new Map<string, Map<string, unknown>>(),
  setActiveDocument(uri: string | undefined): void {
    window.activeTextEditor = uri === undefined ? undefined : { document: { uri: Uri.parse(uri), languageId: 'python' } };
    activeEditorChanged.fire(window.activeTextEditor);
  },
  reset(): void {
    this.statusBarItems.length = 0;
    this.configuration.clear();
    window.activeTextEditor = undefined;
  },
};

export const window = {
  activeTextEditor: undefined as undefined | { document: { uri: Uri; languageId: string } },
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): StatusBarItem {
    const item = new StatusBarItem(id, alignment, priority);
    mock.statusBarItems.push(item);
    return item;
  },
  onDidChangeActiveTextEditor: activeEditorChanged.event,
};

export const workspace = {
  getConfiguration(section: string, scope?: { toString(): string } | null) {
    const key = scope ? scope.toString() : '';
    const values = new Map([...(mock.configuration.get('') ?? new Map()), ...(mock.configuration.get(key) ?? new Map())]);
    return {
      get<T>(name: string, fallback?: T): T | undefined {
        const value = values.get(`${section}.${name}`);
        return (value === undefined ? fallback : value) as T | undefined;
      },
    };
  },
};
