// `liya tenants erase-user <tenantId> <userId>`: erases one end user of a tenant through the admin API.
import type { Command } from 'commander';
import { createElement as h } from 'react';
import type { ErasureReceipt } from '../../server/erasure/erasure.schemas.js';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { dateTime } from '../format.js';
import { printJson, show, withSpinner } from '../output.js';
import { Details } from '../ui/details.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';

const LABELS = { user_id: '<userId>', tenantId: '<tenantId>' };

function receiptFields(receipt: ErasureReceipt): [string, string][] {
  return [
    ['Erasure', receipt.erasure_id],
    ['Subject', receipt.subject],
    ['Requested', dateTime(receipt.requested_at)],
    ['Completed', dateTime(receipt.completed_at)],
    ...Object.entries(receipt.deleted).map(([kind, rows]): [string, string] => [`Deleted ${kind}`, String(rows)]),
    ...Object.entries(receipt.anonymised).map(([kind, rows]): [string, string] => [`Anonymised ${kind}`, String(rows)]),
  ];
}

/** Adds `erase-user` to the `tenants` command. */
export function addEraseUserCommand(tenants: Command): void {
  tenants
    .command('erase-user')
    .description('Erase one end user of a tenant (GDPR Art. 17) by the user_id the API was called with: sessions, transcripts, runs, memory, cached answers and eval cases that carry it')
    .argument('<tenantId>', 'tenant id')
    .argument('<userId>', 'the end user\'s user_id, exactly as the API was called with it')
    .option('--json', 'print the receipt as JSON')
    .action(
      action(async (tenantId: string, userId: string, flags: { json?: boolean }, command: Command) => {
        const { client } = commandContext(command);
        const receipt = await withSpinner('Erasing', () =>
          client.post<ErasureReceipt>(`/admin/tenants/${encodeURIComponent(tenantId)}/erasures`, { auth: 'admin', body: { user_id: userId } }),
        );
        if (flags.json) return printJson(receipt);
        await show(
          h(
            Stack,
            null,
            h(StatusLine, {
              kind: 'success',
              message: `Erased the end user from tenant ${tenantId}`,
              hints: ['The receipt names the person only by its subject hash; it is also in the tenant\'s audit log (data.erase).'],
            }),
            h(Details, { fields: receiptFields(receipt) }),
          ),
        );
      }, LABELS),
    );
}
