// Prompt token counts for the hard cost cap. The cap needs an upper bound of what the provider
// will bill, before the call: OpenAI's o200k tokenizer is exact for current OpenAI models, and
// the four-characters-a-token rule covers providers whose tokenizers are coarser on plain text.
// The tokenizer holds ~20 MB of merge tables, so it is loaded on the first capped run only.
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

type Counter = (text: string) => number;
let counter: Promise<Counter> | null = null;

/** Loads the tokenizer once (about 200 ms the first time). */
export function loadTokenCounter(): Promise<Counter> {
  counter ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => m.countTokens as Counter);
  return counter;
}

/** Framing tokens the chat format adds per message (role, separators), rounded up. */
const PER_MESSAGE = 8;
/** The reply's own priming tokens. */
const PER_REQUEST = 16;

const bound = (count: Counter, text: string) => (text ? Math.max(count(text), Math.ceil(text.length / 4)) : 0);

function messageText(message: ChatCompletionMessageParam): string {
  const content = message.content;
  let text = typeof content === 'string' ? content : Array.isArray(content) ? content.map((p) => ('text' in p ? p.text : '')).join('') : '';
  if (message.role === 'assistant' && message.tool_calls?.length) {
    text += JSON.stringify(message.tool_calls.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : c)));
  }
  return text;
}

/**
 * Counts prompts incrementally: a conversation grows by appending, so each message is counted
 * once (by identity) however many calls it is sent with.
 */
export function createPromptCounter(count: Counter) {
  const counted = new WeakMap<object, number>();
  const toolCounts = new WeakMap<object, number>();
  return (messages: ChatCompletionMessageParam[], tools: ChatCompletionTool[] | undefined): number => {
    let total = PER_REQUEST;
    for (const message of messages) {
      let n = counted.get(message);
      if (n === undefined) {
        n = bound(count, messageText(message)) + PER_MESSAGE;
        counted.set(message, n);
      }
      total += n;
    }
    if (tools?.length) {
      let n = toolCounts.get(tools);
      if (n === undefined) {
        n = bound(count, JSON.stringify(tools));
        toolCounts.set(tools, n);
      }
      total += n;
    }
    return total;
  };
}

/** A cheap estimate (four characters a token) where no hard limit depends on it. */
export const estimateTokens = (text: string) => Math.ceil(text.length / 4);
