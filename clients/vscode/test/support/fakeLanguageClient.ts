// A stand-in for vscode-languageclient/node's LanguageClient: records how it was built and what it was sent.

export type RequestHandler = (method: string, params: unknown) => unknown;

export class LanguageClient {
  static instances: LanguageClient[] = [];
  /** What the next start() does: resolve, or reject with this error. */
  static startError: Error | undefined;
  static initializeResult: unknown = { capabilities: { executeCommandProvider: { commands: ["lspHub.status"] } } };
  static handler: RequestHandler = () => null;

  running = false;
  disposed = false;
  initializeResult: unknown;
  readonly requests: { method: string; params: unknown }[] = [];

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: { command: string; args?: string[]; options?: { cwd?: string } },
    readonly clientOptions: { documentSelector: unknown; initializationOptions: unknown; outputChannel: unknown },
  ) {
    LanguageClient.instances.push(this);
  }

  static reset(): void {
    LanguageClient.instances = [];
    LanguageClient.startError = undefined;
    LanguageClient.initializeResult = { capabilities: { executeCommandProvider: { commands: ["lspHub.status"] } } };
    LanguageClient.handler = () => null;
  }

  async start(): Promise<void> {
    if (LanguageClient.startError !== undefined) {
      throw LanguageClient.startError;
    }
    this.running = true;
    this.initializeResult = LanguageClient.initializeResult;
  }

  isRunning(): boolean {
    return this.running;
  }

  async sendRequest(method: string, params: unknown): Promise<unknown> {
    this.requests.push({ method, params });
    return LanguageClient.handler(method, params);
  }

  async dispose(): Promise<void> {
    this.running = false;
    this.disposed = true;
  }
}
