// online_eval_rules: which production runs are sampled for online evaluation, and by which suite.
import type { EntityManager } from '../../../db/orm.js';
import { flushUnlessDuplicate } from '../../../db/unique-violation.js';
import { OnlineEvalRule, type IOnlineEvalRule } from '../../../db/entities/online-eval.js';


export type { IOnlineEvalRule as OnlineRuleRow } from '../../../db/entities/online-eval.js';

export type OnlineRuleFields = Pick<
  IOnlineEvalRule,
  'name' | 'targetKind' | 'domainKey' | 'intentKey' | 'agentKey' | 'workflowKey' | 'stepId' | 'sampleRate' | 'filter' | 'expectedOutput' | 'dailyCap' | 'enabled'
>;

export async function insertOnlineRule(em: EntityManager, tenantId: string, suiteId: string, fields: OnlineRuleFields): Promise<IOnlineEvalRule | null> {
  const rule = em.create(OnlineEvalRule, { tenant: tenantId, suite: suiteId, ...fields } as never);
  return (await flushUnlessDuplicate(em)) ? rule : null;
}

export async function findTenantOnlineRule(em: EntityManager, tenantId: string, id: string): Promise<IOnlineEvalRule | null> {
  return em.findOne(OnlineEvalRule, { id, tenant: tenantId });
}

export async function listTenantOnlineRules(em: EntityManager, tenantId: string): Promise<IOnlineEvalRule[]> {
  return em.find(OnlineEvalRule, { tenant: tenantId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: 500 });
}

export async function countTenantOnlineRules(em: EntityManager, tenantId: string): Promise<number> {
  return em.count(OnlineEvalRule, { tenant: tenantId });
}

export async function updateOnlineRule(em: EntityManager, rule: IOnlineEvalRule, fields: Partial<OnlineRuleFields> & { suite?: string }): Promise<IOnlineEvalRule | null> {
  em.assign(rule, fields as never);
  return (await flushUnlessDuplicate(em)) ? rule : null;
}

export async function deleteOnlineRule(em: EntityManager, rule: IOnlineEvalRule): Promise<void> {
  await em.remove(rule).flush();
}
