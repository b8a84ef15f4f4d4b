// A HubConnection with canned answers, for the command and status bar tests.

import type { HubConnection } from "../../src/hub";

export class FakeHub implements HubConnection {
  running = true;
  commands: string[];
  answers = new Map<string, unknown>();
  calls: { command: string; argument: object | undefined }[] = [];
  restarts = 0;
  outputShown = 0;
  failWith: Error | undefined;

  constructor(commands: string[] = ["lspHub.status", "lspHub.repoMap", "lspHub.relevantFiles", "lspHub.syntaxCheck", "lspHub.callers"]) {
    this.commands = commands;
  }

  isRunning(): boolean {
    return this.running;
  }

  async whenReady(): Promise<void> {}

  advertisedCommands(): string[] {
    return this.commands;
  }

  async executeCommand(command: string, argument?: object): Promise<unknown> {
    this.calls.push({ command, argument });
    if (this.failWith) {
      throw this.failWith;
    }
    if (!this.answers.has(command)) {
      throw new Error(`FakeHub: no answer for ${command}`);
    }
    return this.answers.get(command);
  }

  async restart(): Promise<void> {
    this.restarts += 1;
  }

  showOutput(): void {
    this.outputShown += 1;
  }
}
