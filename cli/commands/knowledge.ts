// `liya knowledge query <domain> "<question>"`: the chunks of the tenant's knowledge base nearest to
// a question (POST /v1/domains/{domain}/knowledge/query) with the tenant API key.
import { Command } from 'commander';
import { Box, Text } from 'ink';
import { createElement as h } from 'react';
import type { KnowledgeResult } from '../../server/knowledge/knowledge.schemas.js';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { CliError } from '../errors.js';
import { printJson, show, withSpinner } from '../output.js';
import { parseInteger } from '../options.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { resolveCollections } from './documents.js';

const MAX_TOP_K = 50;
const TEXT_LENGTH = 300;

/** The chunk's text on one line, cut to `max` characters. */
export function excerpt(text: string, max = TEXT_LENGTH): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((v) => v.trim()).filter(Boolean)];
}

function ResultList({ results }: { results: KnowledgeResult[] }) {
  return h(
    Box,
    { flexDirection: 'column', gap: 1, flexShrink: 0 },
    ...results.map((r, i) =>
      h(
        Box,
        { key: r.chunk_id, flexDirection: 'column', flexShrink: 0 },
        h(
          Text,
          null,
          h(Text, { bold: true }, `${i + 1}.`),
          ` ${r.score.toFixed(3)}  `,
          h(Text, { bold: true }, r.document_name),
          r.locator ? h(Text, { dimColor: true }, `  ${r.locator}`) : null,
        ),
        h(Text, null, `   ${excerpt(r.text)}`),
      ),
    ),
  );
}

export function knowledgeCommand(): Command {
  const knowledge = new Command('knowledge').description('Search the tenant\'s knowledge base (the documents of the collections attached to a domain); needs --api-key');

  knowledge
    .command('query')
    .description('The chunks nearest to a question, best first: rank, score, document, locator and text')
    .argument('<domain>', 'domain key, e.g. hiring')
    .argument('<question>', 'what to look for')
    .option('--top-k <n>', `how many chunks (default 5, at most ${MAX_TOP_K})`, parseInteger(1, MAX_TOP_K))
    .option('--collection <id...>', 'only these collections (ids or slugs; repeat or separate with commas)', collect)
    .option('--json', 'print {results} as JSON')
    .action(
      action(async (domain: string, question: string, flags: { topK?: number; collection?: string[]; json?: boolean }, command: Command) => {
        if (!question.trim()) throw new CliError('The question is empty', ['For example: liya knowledge query hiring "How long is parental leave?"']);
        const client = commandContext(command).withApiKey();
        const result = await withSpinner(`Searching ${domain}`, async () => {
          const collectionIds = flags.collection?.length ? await resolveCollections(client, flags.collection) : undefined;
          return client.post<{ results: KnowledgeResult[] }>(`/v1/domains/${encodeURIComponent(domain)}/knowledge/query`, {
            auth: 'bearer',
            body: { query: question, ...(flags.topK ? { top_k: flags.topK } : {}), ...(collectionIds ? { collection_ids: collectionIds } : {}) },
          });
        });
        if (flags.json) return printJson(result);
        const count = result.results.length;
        await show(
          h(
            Stack,
            null,
            count ? h(ResultList, { results: result.results }) : null,
            h(StatusLine, {
              kind: 'info',
              message: count ? `${count} chunk${count === 1 ? '' : 's'} from ${domain}'s knowledge base.` : `Nothing in ${domain}'s knowledge base matches.`,
              hints: count ? [] : ['Upload documents into a collection attached to the domain: liya documents upload <file...> --collection <slug>'],
            }),
          ),
        );
      }, { query: '<question>', top_k: '--top-k', collection_ids: '--collection' }),
    );

  return knowledge;
}
