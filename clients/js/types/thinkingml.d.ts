// The ThinkingML reader's types (src/thinkingml.js).

/** One <phase> of <thinking>: its id, its <title> and the text after it. */
export interface ThinkingPhase {
  id: string;
  title: string;
  text: string;
}

/** A reply read as ThinkingML, whole or still arriving. */
export interface ParsedReply {
  think: string | null;
  serp: string | null;
  phases: ThinkingPhase[];
  /** The <final> Markdown without its serp block; null until <final> starts. */
  final: string | null;
  serpQueries: string[];
  /** The whole text when the reply has neither <thinking> nor <final>. */
  raw: string | null;
}

export function parseReply(text: string): ParsedReply;
/** Resolves XML entities and numeric character references. */
export function decode(text: string): string;
