// @phaseflow/client's API. The shapes of what the server sends (sessions, messages, events,
// GenUI cards) are generated from the OpenAPI document into api.d.ts; this file declares
// the client around them.

import type * as api from './api.js';
import type { ParsedReply } from './thinkingml.js';

export type * from './api.js';
export { parseReply } from './thinkingml.js';
export type { ParsedReply, ThinkingPhase } from './thinkingml.js';

/** A bearer token, or a function answering one (asked before every request). */
export type TokenSource = string | (() => string | Promise<string>);

export interface ClientOptions {
  /** "https://host" (no /api/v1); '' for the page's own origin. */
  baseUrl?: string;
  token?: TokenSource;
  fetch?: typeof fetch;
  /** How a turn just sent is followed: fetch with the bearer token, or EventSource with its stream token. */
  transport?: 'fetch' | 'eventsource';
  EventSource?: unknown;
}

/** An error answer of the API, carrying its code. */
export class PhaseflowError extends Error {
  status: number;
  code: api.ErrorBody['code'] | `http_${number}`;
  detail: api.ErrorBody | Record<string, never>;
  /** Retry-After in seconds, when the answer had one. */
  retryAfter: number | undefined;
}

/** A stream that could not be followed to its terminal event. */
export class StreamLostError extends Error {
  status: number | undefined;
}

/** One event of a message's stream, as the turn hands it on. */
export type TurnEvent =
  | { event: 'status'; data: api.StatusEvent; id: number | null }
  | { event: 'content_delta'; data: api.ContentDeltaEvent; id: number | null }
  | { event: 'completed'; data: api.CompletedEvent; id: number | null }
  | { event: 'error'; data: api.ErrorEvent; id: number | null }
  | { event: 'heartbeat'; data: api.HeartbeatEvent; id: number | null };

export type ConnectionListener = (state: 'open' | 'reconnecting', reconnects: number) => void;

export interface StreamOptions {
  signal?: AbortSignal;
  onConnection?: ConnectionListener;
}

/** A message's generation as a client follows it; iterate it once. */
export class Turn implements AsyncIterable<TurnEvent> {
  readonly messageId: string;
  readonly requestId: string | undefined;
  readonly sessionId: string | undefined;
  readonly streamToken: string | undefined;
  /** The last status event's state. */
  status: api.StatusEvent['state'] | null;
  toolCalls: api.ToolState[];
  metadata: api.CompletedMetadata | null;
  error: { code: api.ErrorEvent['code']; message: string; fallback?: string | null } | null;
  done: boolean;
  /** True when the assembled reply had completed.reply_len; false when it was read back. */
  replyChecked: boolean | null;
  reconnects: number;
  /** The reply so far, by the retry rule. */
  readonly reply: string;
  readonly parsed: ParsedReply;
  readonly attempt: number;
  /** completed.metadata's verdict, cards and applied patch (null, [] and null before). */
  readonly validation: api.CompletedMetadata['validation'] | null;
  readonly genui: api.GenUICard[];
  readonly statePatch: api.CompletedMetadata['state_patch'] | null;
  /** Counts the changes; with subscribe, what useSyncExternalStore asks for. */
  readonly version: number;
  [Symbol.asyncIterator](): AsyncIterator<TurnEvent>;
  /** Follows the turn to its end; the same promise each time. */
  result(): Promise<Turn>;
  cancel(): Promise<api.CancelAnswer>;
  subscribe(listener: () => void): () => void;
}

export type JobEvent = { event: 'progress' | 'completed' | 'cancelled'; data: api.JobProgressEvent; id: number | null };

/** A JSON-skill job's progress as a client follows it. */
export class JobProgress implements AsyncIterable<JobEvent> {
  readonly jobId: string;
  progress: api.JobProgressEvent | null;
  ended: 'completed' | 'cancelled' | null;
  [Symbol.asyncIterator](): AsyncIterator<JobEvent>;
  result(): Promise<api.JobProgressEvent | null>;
}

/** Assembles a reply from content_delta events by the contract's retry rule. */
export class ReplyAssembler {
  add(delta: api.ContentDeltaEvent): boolean;
  retry(status: api.StatusEvent): void;
  text(): string;
  readonly length: number;
  readonly attempt: number;
}

export interface SendOptions extends StreamOptions {
  clientRequestId?: string;
  locale?: 'en' | 'zh';
  runtimePolicy?: api.RuntimePolicyRequest;
}

export interface Client {
  request<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  sessions: {
    create(options?: { title?: string; locale?: 'en' | 'zh' }): Promise<api.Session>;
    get(sessionId: string): Promise<api.Session>;
    list(options?: { limit?: number }): AsyncIterable<api.Session>;
    messages(sessionId: string, options?: { limit?: number }): AsyncIterable<api.Message>;
    transitions(sessionId: string, options?: { limit?: number }): AsyncIterable<api.Transition>;
    movePhase(sessionId: string, to: string, reason?: string): Promise<api.Session>;
    /** The turn being generated in the session, followed from its start; null when none runs. */
    running(sessionId: string, options?: StreamOptions): Promise<Turn | null>;
  };
  messages: {
    get(messageId: string): Promise<api.Message>;
    cancel(messageId: string): Promise<api.CancelAnswer>;
    follow(messageId: string, options?: StreamOptions & { lastEventId?: number; streamToken?: string }): Turn;
  };
  strategies: {
    get(strategyId: string): Promise<api.Strategy>;
    confirm(strategyId: string, options?: { advance?: boolean }): Promise<api.ConfirmedStrategy>;
  };
  skills: {
    list(): Promise<api.Skill[]>;
    run(name: string, input: unknown, options?: { locale?: 'en' | 'zh'; sourceId?: string }): Promise<api.SkillRun>;
    startJob(name: string, inputs: unknown[], options?: { locale?: 'en' | 'zh' }): Promise<api.SkillJobAccepted>;
    job(jobId: string): Promise<api.SkillJob>;
    cancelJob(jobId: string): Promise<api.SkillJobCancelAnswer>;
    followJob(jobId: string, options?: { lastEventId?: number; signal?: AbortSignal; streamToken?: string }): JobProgress;
  };
  /** Posts text to a session (a new one without sessionId) and follows the turn. */
  send(sessionId: string | undefined, text: string, options?: SendOptions): Promise<Turn>;
}

export function createClient(options?: ClientOptions): Client;
