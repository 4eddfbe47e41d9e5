// The built-in hiring domain: definitions, prompt templates, input contracts and output schemas.
// No server needed: every schema is compiled with ajv and exercised with hand-written samples.
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { HIRING_DOMAIN, HIRING_INTENT_KEYS, HIRING_INTENTS, getHiringIntent } from '../../server/hiring/hiring-intents.js';
import {
  COMMON_INPUT_FIELDS,
  FAIRNESS_RULES,
  INCLUSIVE_LANGUAGE_RULES,
  MATERIAL_RULES,
  OUTPUT_RULES,
} from '../../server/hiring/shared.js';
import type { IntentDefinition } from '../../server/intents/intent-definition.js';

type Json = Record<string, unknown>;

// Strict: an unknown or misspelt keyword (`minimun`) fails compilation instead of being ignored.
const ajv2020 = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
formatsModule.default(ajv2020);
// The draft-07 dialect, as a lenient runtime validator would read the same schemas.
const ajv07 = new Ajv({ strict: false, allErrors: true });
formatsModule.default(ajv07);

const compile = (schema: Json) => ajv2020.compile(schema);
const valid = (schema: Json, value: unknown) => {
  const validate = compile(schema);
  const ok = validate(value);
  return { ok, errors: validate.errors };
};

const EXPECTED_KEYS = [
  'resume-analysis',
  'job-match',
  'candidate-screening',
  'skill-gap-analysis',
  'career-path',
  'interview-questions',
  'mock-interview',
  'answer-feedback',
  'resume-rewrite',
  'cover-letter',
  'job-description',
  'career-coach',
];
const CONVERSATIONAL = ['mock-interview', 'career-coach'];
const CACHED = ['resume-analysis', 'job-match', 'candidate-screening', 'skill-gap-analysis', 'career-path', 'answer-feedback'];

const intent = (key: string): IntentDefinition => {
  const found = HIRING_INTENTS.find((i) => i.key === key);
  if (!found) throw new Error(`no intent ${key}`);
  return found;
};

// ---------------------------------------------------------------------------------------------
// Sample material
// ---------------------------------------------------------------------------------------------

const RESUME = `Alex Kim - Senior Backend Engineer
Experience
Acme Payments, Senior Backend Engineer (2019 - present)
- Designed the ledger service in Go and PostgreSQL handling 2M transactions per day.
- Led a team of 4 engineers; migrated 12 services to Kubernetes on AWS.
Globex, Software Engineer (2015 - 2019)
- Built REST APIs in Java and Spring; reduced p95 latency by 40%.
Education: BSc Computer Science
Skills: Go, Java, PostgreSQL, Kubernetes, AWS`;

const JOB_DESCRIPTION = `Senior Backend Engineer at Initech.
Requirements: 5+ years building backend services in Go or Java; strong PostgreSQL; production Kubernetes.
Nice to have: Kafka, AWS. You will own the payments platform and mentor engineers.`;

interface Case {
  input: Json;
  /** Inputs the schema must reject, each with why. */
  badInputs: Array<[string, Json]>;
  output: Json;
  /** Outputs the schema must reject, each made from the valid one. */
  badOutputs: Array<[string, (o: Json) => Json]>;
}

const clone = <T>(v: T): T => structuredClone(v);
const without = (o: Json, key: string): Json => {
  const copy = clone(o);
  delete copy[key];
  return copy;
};
const set = (o: Json, key: string, value: unknown): Json => ({ ...clone(o), [key]: value });
/** Changes `field` on the first item of the array `arrayKey`. */
const setInFirst = (o: Json, arrayKey: string, field: string, value: unknown): Json => {
  const copy = clone(o);
  const list = copy[arrayKey] as Json[];
  list[0] = { ...list[0], [field]: value };
  return copy;
};

const CASES: Record<string, Case> = {
  'resume-analysis': {
    input: { user_id: 'u-1', resume_text: RESUME, target_role: 'Staff Engineer' },
    badInputs: [
      ['no resume_text', { user_id: 'u-1', target_role: 'Staff Engineer' }],
      ['resume_text blank', { user_id: 'u-1', resume_text: ' \n\t ' }],
      ['resume_text over its maximum', { user_id: 'u-1', resume_text: 'x'.repeat(60_001) }],
    ],
    output: {
      summary: 'Backend engineer with about nine years of experience in payments, focused on Go, Java and PostgreSQL.',
      strengths: ['Designed a ledger service handling 2M transactions per day', 'Led a team of 4 engineers'],
      gaps: ['No measurable outcome for the Kubernetes migration'],
      skills: [
        { name: 'Go', level: 'advanced', evidence: 'Designed the ledger service in Go' },
        { name: 'AWS', level: 'intermediate', evidence: 'Migrated 12 services to Kubernetes on AWS' },
      ],
      seniority: 'senior',
      years_experience_estimate: 9,
      score: 82,
      red_flags: [],
      suggestions: ['Add the outcome of the Kubernetes migration (cost, deploy frequency).'],
      limitations: [],
    },
    badOutputs: [
      ['score above 100', (o) => set(o, 'score', 140)],
      ['unknown seniority', (o) => set(o, 'seniority', 'rockstar')],
      ['skill level outside the scale', (o) => setInFirst(o, 'skills', 'level', 'guru')],
      ['skill without evidence', (o) => {
        const c = clone(o);
        delete (c.skills as Json[])[0].evidence;
        return c;
      }],
      ['negative experience', (o) => set(o, 'years_experience_estimate', -2)],
    ],
  },
  'job-match': {
    input: { user_id: 'u-1', resume_text: RESUME, job_description: JOB_DESCRIPTION, job_title: 'Senior Backend Engineer' },
    badInputs: [
      ['no job_description', { user_id: 'u-1', resume_text: RESUME }],
      ['no resume_text', { user_id: 'u-1', job_description: JOB_DESCRIPTION }],
      ['years_experience is a string', { user_id: 'u-1', resume_text: RESUME, job_description: JOB_DESCRIPTION, years_experience: 'nine' }],
    ],
    output: {
      overall_score: 84,
      verdict: 'strong_match',
      requirements: [
        { requirement: '5+ years backend in Go or Java', importance: 'must_have', met: 'yes', evidence: 'Backend roles since 2015 in Java and Go', score: 95 },
        { requirement: 'Kafka', importance: 'nice_to_have', met: 'no', evidence: 'No evidence in the resume', score: 0 },
      ],
      matched_skills: ['Go', 'Java', 'PostgreSQL', 'Kubernetes', 'AWS'],
      missing_skills: ['Kafka'],
      transferable_strengths: ['Team leadership'],
      summary: 'Meets every must-have with strong evidence; Kafka is not shown.',
      limitations: [],
    },
    badOutputs: [
      ['verdict outside the enum', (o) => set(o, 'verdict', 'maybe')],
      ['met outside yes/partial/no', (o) => setInFirst(o, 'requirements', 'met', 'mostly')],
      ['requirement score above 100', (o) => setInFirst(o, 'requirements', 'score', 101)],
      ['fractional overall score', (o) => set(o, 'overall_score', 84.5)],
    ],
  },
  'candidate-screening': {
    input: {
      user_id: 'u-1',
      resume_text: RESUME,
      job_description: JOB_DESCRIPTION,
      knockout_criteria: ['5+ years of backend development'],
    },
    badInputs: [
      ['no job_description', { user_id: 'u-1', resume_text: RESUME }],
      ['job_description blank', { user_id: 'u-1', resume_text: RESUME, job_description: '   ' }],
      ['knockout_criteria not a list', { user_id: 'u-1', resume_text: RESUME, job_description: JOB_DESCRIPTION, knockout_criteria: '5 years' }],
    ],
    output: {
      recommendation: 'advance',
      score: 80,
      knockout_criteria: [{ criterion: '5+ years of backend development', status: 'met', evidence: 'Backend roles from 2015 to present' }],
      knockout_failures: [],
      rationale: 'All knockout criteria are met and the Go and PostgreSQL work matches the core of the role.',
      strengths: ['Ledger design at scale'],
      concerns: ['Kafka not shown'],
      follow_up_questions: ['Have you worked with event streaming such as Kafka?'],
      limitations: [],
    },
    badOutputs: [
      ['recommendation outside advance/hold/reject', (o) => set(o, 'recommendation', 'hire')],
      ['knockout status outside the enum', (o) => setInFirst(o, 'knockout_criteria', 'status', 'passed')],
      ['knockout failures not a list', (o) => set(o, 'knockout_failures', 'none')],
      ['too many follow-up questions', (o) => set(o, 'follow_up_questions', Array.from({ length: 9 }, (_, i) => `Question ${i}?`))],
    ],
  },
  'skill-gap-analysis': {
    input: { user_id: 'u-1', target_role: 'Engineering Manager', skills: ['Go', 'Mentoring'], years_experience: 9 },
    badInputs: [
      ['neither skills nor resume_text', { user_id: 'u-1', target_role: 'Engineering Manager' }],
      ['empty skills and no resume', { user_id: 'u-1', target_role: 'Engineering Manager', skills: [] }],
      ['no target_role', { user_id: 'u-1', skills: ['Go'] }],
    ],
    output: {
      target_role: 'Engineering Manager',
      readiness_score: 55,
      skills: [
        { skill: 'People management', importance: 'essential', required_level: 'advanced', current_level: 'beginner', gap_severity: 'large', evidence: 'self-reported' },
        { skill: 'Go', importance: 'nice_to_have', required_level: 'intermediate', current_level: 'intermediate', gap_severity: 'none', evidence: 'self-reported' },
      ],
      learning_plan: [
        {
          skill: 'People management',
          priority: 'high',
          why_it_matters: 'Managers are accountable for their team\'s growth and delivery.',
          actions: ['Run weekly one-to-ones with a mentee', 'Read a book on engineering management'],
          estimated_weeks: 24,
        },
      ],
      strengths: ['Mentoring experience'],
      summary: 'Strong technical base; the main gap is formal people management.',
      limitations: ['General role expectations were used; no job description was given.'],
    },
    badOutputs: [
      ['current level outside the enum', (o) => setInFirst(o, 'skills', 'current_level', 'some')],
      ['plan without actions', (o) => setInFirst(o, 'learning_plan', 'actions', [])],
      ['readiness below 0', (o) => set(o, 'readiness_score', -5)],
    ],
  },
  'career-path': {
    input: { user_id: 'u-1', current_role: 'Senior Backend Engineer', skills: ['Go', 'PostgreSQL'], interests: 'Architecture and mentoring' },
    badInputs: [
      ['neither current_role nor resume_text', { user_id: 'u-1', skills: ['Go'] }],
      ['resume_text blank and no current_role', { user_id: 'u-1', resume_text: '\n\n' }],
    ],
    output: {
      current_position: 'Senior backend engineer in payments with team-lead experience.',
      paths: [
        {
          title: 'Staff Engineer',
          path_type: 'progression',
          fit_score: 75,
          rationale: 'Designed core systems and leads engineers.',
          steps: [{ milestone: 'Lead a cross-team technical initiative', typical_duration_months: 12 }],
          skills_to_build: ['Technical strategy'],
          transferable_strengths: ['System design'],
          risks: ['Less hands-on coding time'],
        },
      ],
      recommended_path: 'Staff Engineer',
      immediate_next_steps: ['Write a design proposal for a cross-team problem'],
      limitations: [],
    },
    badOutputs: [
      ['no paths', (o) => set(o, 'paths', [])],
      ['path type outside the enum', (o) => setInFirst(o, 'paths', 'path_type', 'sideways')],
      ['path without steps', (o) => setInFirst(o, 'paths', 'steps', [])],
      ['more than 5 next steps', (o) => set(o, 'immediate_next_steps', ['a', 'b', 'c', 'd', 'e', 'f'])],
    ],
  },
  'interview-questions': {
    input: { user_id: 'u-1', job_title: 'Senior Backend Engineer', question_count: 6, interview_type: 'mixed', focus_areas: ['System design'] },
    badInputs: [
      ['neither job_title nor job_description', { user_id: 'u-1', question_count: 5 }],
      ['question_count above 20', { user_id: 'u-1', job_title: 'Engineer', question_count: 50 }],
      ['unknown interview_type', { user_id: 'u-1', job_title: 'Engineer', interview_type: 'stress' }],
    ],
    output: {
      role_summary: 'Senior backend engineer owning a payments platform.',
      competencies_covered: ['System design', 'Ownership'],
      questions: [
        {
          question: 'Tell me about a time you had to change a system\'s design after it was in production.',
          type: 'behavioral',
          competency: 'Ownership',
          difficulty: 'medium',
          what_good_answer_shows: 'A specific example, the candidate\'s own decisions, a measurable result.',
          weak_answer_signals: 'Only describes what the team did; no outcome.',
          follow_up: 'What would you do differently today?',
        },
        {
          question: 'How would you design an idempotent payment API?',
          type: 'technical',
          competency: 'System design',
          difficulty: 'hard',
          what_good_answer_shows: 'Idempotency keys, storage of request outcomes, retry semantics and trade-offs.',
          weak_answer_signals: 'Relies on clients never retrying.',
          follow_up: null,
        },
      ],
      limitations: [],
    },
    badOutputs: [
      ['no questions', (o) => set(o, 'questions', [])],
      ['question type outside the enum', (o) => setInFirst(o, 'questions', 'type', 'trivia')],
      ['question without what a good answer shows', (o) => {
        const c = clone(o);
        delete (c.questions as Json[])[0].what_good_answer_shows;
        return c;
      }],
      ['extra property on a question', (o) => setInFirst(o, 'questions', 'ideal_age', 30)],
    ],
  },
  'mock-interview': {
    input: { user_id: 'u-1', message: 'I am ready to start.', job_title: 'Product Manager', max_questions: 5 },
    badInputs: [
      ['no message', { user_id: 'u-1', job_title: 'Product Manager' }],
      ['empty message', { user_id: 'u-1', message: '' }],
      ['max_questions above 15', { user_id: 'u-1', message: 'Hi', max_questions: 40 }],
    ],
    output: {
      reply: 'Thanks, that was a clear example. Next: how do you decide what not to build?',
      question_number: 2,
      feedback_on_last_answer: {
        strengths: ['Clear situation and task'],
        improvements: ['Quantify the result'],
        score: 4,
      },
      done: false,
      final_assessment: null,
    },
    badOutputs: [
      ['feedback score above 5', (o) => set(o, 'feedback_on_last_answer', { strengths: [], improvements: [], score: 7 })],
      ['done as a string', (o) => set(o, 'done', 'no')],
      ['feedback missing a field', (o) => set(o, 'feedback_on_last_answer', { strengths: [], score: 3 })],
      ['question number negative', (o) => set(o, 'question_number', -1)],
    ],
  },
  'answer-feedback': {
    input: {
      user_id: 'u-1',
      question: 'Tell me about a time you resolved a conflict in your team.',
      answer: 'Two engineers disagreed on the database choice. I set up a short spike to compare both and we picked PostgreSQL.',
      job_title: 'Tech Lead',
    },
    badInputs: [
      ['no answer and no message', { user_id: 'u-1', question: 'Tell me about a conflict.' }],
      ['blank answer, no message', { user_id: 'u-1', question: 'Tell me about a conflict.', answer: ' \n' }],
      ['blank message, no answer', { user_id: 'u-1', message: '\t ' }],
      ['answer too long', { user_id: 'u-1', answer: 'x'.repeat(15_001) }],
    ],
    output: {
      question_type: 'behavioral',
      overall_score: 62,
      relevance: 'high',
      star: {
        situation: { rating: 'adequate', feedback: 'Clear context: a disagreement on the database.' },
        task: { rating: 'weak', feedback: 'Your own responsibility is implied, not stated.' },
        action: { rating: 'adequate', feedback: 'The spike is a good concrete action; say what you did in it.' },
        result: { rating: 'weak', feedback: 'No outcome beyond the choice; how did the team work afterwards?' },
      },
      strengths: ['Concrete, constructive action'],
      improvements: ['State your role', 'Describe the result for the team'],
      improved_answer: 'As tech lead [your role], I ... The team shipped [outcome] within [timeframe].',
      summary: 'A relevant example that needs a clearer task and result.',
      limitations: [],
    },
    badOutputs: [
      ['STAR rating outside the enum', (o) => {
        const c = clone(o);
        (c.star as Record<string, Json>).result.rating = 'excellent';
        return c;
      }],
      ['STAR without the result', (o) => {
        const c = clone(o);
        delete (c.star as Json).result;
        return c;
      }],
      ['relevance outside the enum', (o) => set(o, 'relevance', 'total')],
    ],
  },
  'resume-rewrite': {
    input: { user_id: 'u-1', resume_text: RESUME, target_role: 'Staff Engineer' },
    badInputs: [
      ['no resume_text', { user_id: 'u-1', target_role: 'Staff Engineer' }],
      ['resume_text not a string', { user_id: 'u-1', resume_text: 42 }],
    ],
    output: {
      rewritten_resume: '## Summary\nBackend engineer...\n## Experience\n- Designed the ledger service in Go and PostgreSQL, handling 2M transactions per day.',
      professional_summary: 'Backend engineer who designs high-volume payment systems in Go and PostgreSQL.',
      changes: [{ section: 'Experience', original: 'Built REST APIs in Java and Spring', revised: 'Built Java/Spring REST APIs', reason: 'Shorter.' }],
      quantification_opportunities: [{ statement: 'Migrated 12 services to Kubernetes', question: 'What changed in deploy time or cost?' }],
      keywords_emphasised: ['Kubernetes'],
      limitations: [],
    },
    badOutputs: [
      ['change missing its reason', (o) => set(o, 'changes', [{ section: 'x', original: 'a', revised: 'b' }])],
      ['rewritten resume not a string', (o) => set(o, 'rewritten_resume', ['line'])],
      ['more than 15 changes', (o) =>
        set(o, 'changes', Array.from({ length: 16 }, () => ({ section: 's', original: 'a', revised: 'b', reason: 'r' })))],
    ],
  },
  'cover-letter': {
    input: { user_id: 'u-1', resume_text: RESUME, job_description: JOB_DESCRIPTION, company_name: 'Initech', tone: 'warm' },
    badInputs: [
      ['no job_description', { user_id: 'u-1', resume_text: RESUME }],
      ['unknown tone', { user_id: 'u-1', resume_text: RESUME, job_description: JOB_DESCRIPTION, tone: 'sarcastic' }],
    ],
    output: {
      cover_letter: 'Dear Hiring Manager,\n\nInitech\'s payments platform...\n\nKind regards,\n[Your Name]',
      key_points: [{ requirement: 'Go backend services', claim: 'I designed a ledger service in Go', resume_evidence: 'Designed the ledger service in Go and PostgreSQL' }],
      placeholders: ['[Your Name]'],
      word_count: 310,
      limitations: [],
    },
    badOutputs: [
      ['negative word count', (o) => set(o, 'word_count', -1)],
      ['key point without evidence', (o) => set(o, 'key_points', [{ requirement: 'Go', claim: 'I know Go' }])],
    ],
  },
  'job-description': {
    input: {
      user_id: 'u-1',
      job_title: 'Data Analyst',
      company_name: 'Initech',
      work_arrangement: 'hybrid',
      employment_type: 'full_time',
      skills: ['SQL', 'Python'],
    },
    badInputs: [
      ['no job_title', { user_id: 'u-1', company_name: 'Initech' }],
      ['unknown work_arrangement', { user_id: 'u-1', job_title: 'Data Analyst', work_arrangement: 'mars' }],
    ],
    output: {
      title: 'Data Analyst',
      summary: 'You will turn Initech\'s data into decisions.',
      responsibilities: ['Build dashboards that teams use weekly'],
      must_have_qualifications: ['Confident with SQL'],
      nice_to_have_qualifications: ['Python'],
      benefits: ['[Benefits]'],
      equal_opportunity_statement: 'We welcome applicants from all backgrounds; accommodations are available on request.',
      full_text: '# Data Analyst\n...',
      inclusive_language_notes: ['Used "you" throughout.'],
      placeholders: ['[Benefits]', '[Salary range]'],
    },
    badOutputs: [
      ['no responsibilities', (o) => set(o, 'responsibilities', [])],
      ['more than 8 must-haves', (o) => set(o, 'must_have_qualifications', Array.from({ length: 9 }, (_, i) => `q${i}`))],
    ],
  },
  'career-coach': {
    input: { user_id: 'u-1', message: 'How do I prepare for a move into product management?', current_role: 'QA Engineer' },
    badInputs: [
      ['no message', { user_id: 'u-1', current_role: 'QA Engineer' }],
      ['message not a string', { user_id: 'u-1', message: { text: 'hi' } }],
    ],
    output: {
      reply: 'Your QA background gives you a strong view of users\' pain points...',
      suggested_actions: [{ action: 'Shadow a product manager for a sprint', timeframe: 'this_month', why: 'See the day-to-day work first-hand.' }],
      follow_up_question: 'Which part of product work appeals to you most?',
    },
    badOutputs: [
      ['timeframe outside the enum', (o) => setInFirst(o, 'suggested_actions', 'timeframe', 'someday')],
      ['more than 3 actions', (o) =>
        set(o, 'suggested_actions', Array.from({ length: 4 }, () => ({ action: 'a', timeframe: 'today', why: 'w' })))],
      ['follow-up question as a number', (o) => set(o, 'follow_up_question', 3)],
    ],
  },
};

// ---------------------------------------------------------------------------------------------
// Schema walking
// ---------------------------------------------------------------------------------------------

/** Keywords the output schemas may use: the strict structured-output subset. */
const OUTPUT_KEYWORDS = new Set([
  'type',
  'description',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'anyOf',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
]);

/** Every subschema with the JSON pointer-ish path it sits at. */
function walk(schema: Json, path = '#'): Array<[string, Json]> {
  const out: Array<[string, Json]> = [[path, schema]];
  const props = schema.properties as Record<string, Json> | undefined;
  if (props) for (const [k, v] of Object.entries(props)) out.push(...walk(v, `${path}/properties/${k}`));
  if (schema.items) out.push(...walk(schema.items as Json, `${path}/items`));
  if (Array.isArray(schema.anyOf)) (schema.anyOf as Json[]).forEach((s, i) => out.push(...walk(s, `${path}/anyOf/${i}`)));
  return out;
}

const isObjectType = (s: Json) => s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object'));

const PLACEHOLDER = /\{\{\s*([^}]+?)\s*\}\}/g;
const placeholders = (template: string) => [...template.matchAll(PLACEHOLDER)].map((m) => m[1]);
const inputPlaceholders = (template: string) =>
  placeholders(template)
    .filter((p) => p.startsWith('input.'))
    .map((p) => p.slice('input.'.length));

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

describe('hiring domain', () => {
  it('has exactly the 12 intents with the exact keys, unique ids and the shared fields', () => {
    expect(HIRING_INTENTS).toHaveLength(12);
    expect(HIRING_INTENTS.map((i) => i.key)).toEqual(EXPECTED_KEYS);
    expect([...HIRING_INTENT_KEYS]).toEqual(EXPECTED_KEYS);
    expect(new Set(HIRING_INTENTS.map((i) => i.id)).size).toBe(12);
    for (const i of HIRING_INTENTS) {
      expect(i.id).toBe(`hiring/${i.key}`);
      expect(i.domain).toBe('hiring');
      expect(i.builtIn).toBe(true);
      expect(i.version).toBe(1);
      expect(i.displayName.length).toBeGreaterThan(3);
      expect(i.description).toMatch(/^[A-Z].{20,}\.$/);
      expect(i.conversational).toBe(CONVERSATIONAL.includes(i.key));
      expect(getHiringIntent(i.key)).toBe(i);
    }
    expect(getHiringIntent('nope')).toBeUndefined();
    expect(HIRING_DOMAIN).toMatchObject({ domain_key: 'hiring', display_name: 'Hiring' });
    expect(HIRING_DOMAIN.description.length).toBeGreaterThan(20);
  });

  it('leaves the model to routing and sets temperature, cache, guardrails and retrieval per intent', () => {
    for (const i of HIRING_INTENTS) {
      expect(i.executionConfig.model, i.key).toBeUndefined();
      expect(i.executionConfig.temperature, i.key).toBeGreaterThanOrEqual(0);
      expect(i.executionConfig.temperature, i.key).toBeLessThanOrEqual(1);
      expect(i.guardrailsConfig, i.key).toBeNull();
      expect(i.retrievalConfig, i.key).toBeNull();
      if (CACHED.includes(i.key)) {
        expect(i.cacheConfig, i.key).toEqual({ enabled: true, ttl_seconds: 3600 });
        expect(i.executionConfig.temperature, i.key).toBeLessThanOrEqual(0.4);
      } else {
        expect(i.cacheConfig, i.key).toBeNull();
      }
    }
    // Creative writing runs warmer than scoring.
    expect(intent('cover-letter').executionConfig.temperature).toBeGreaterThan(intent('job-match').executionConfig.temperature!);
    expect(intent('candidate-screening').executionConfig.temperature).toBeLessThanOrEqual(0.2);
  });
});

describe('hiring input schemas', () => {
  it.each(EXPECTED_KEYS)('%s: compiles, requires user_id, allows extra properties', (key) => {
    const schema = intent(key).inputSchema as Json;
    expect(schema).not.toBeNull();
    expect(() => compile(schema)).not.toThrow();
    expect(() => ajv07.compile(schema)).not.toThrow();
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(true);
    expect(schema.required).toContain('user_id');
    expect((schema.properties as Record<string, Json>).user_id).toMatchObject({ type: 'string', minLength: 1 });
  });

  it.each(EXPECTED_KEYS)('%s: accepts a realistic input and rejects incomplete ones', (key) => {
    const schema = intent(key).inputSchema as Json;
    const c = CASES[key];
    const ok = valid(schema, c.input);
    expect(ok.errors, JSON.stringify(ok.errors)).toBeNull();
    // Extra properties are allowed by the common IntentRequest input.
    expect(valid(schema, { ...c.input, preferred_language: 'en' }).ok).toBe(true);
    expect(valid(schema, without(c.input, 'user_id')).ok).toBe(false);
    expect(valid(schema, { ...c.input, user_id: '' }).ok).toBe(false);
    expect(c.badInputs.length).toBeGreaterThan(0);
    for (const [why, bad] of c.badInputs) expect(valid(schema, bad).ok, why).toBe(false);
    // Every required field really is required.
    for (const field of schema.required as string[]) {
      if (field in c.input) expect(valid(schema, without(c.input, field)).ok, `without ${field}`).toBe(false);
    }
  });

  // What each intent cannot run without; every other field is optional.
  const NEEDS: Record<string, Json> = {
    'resume-analysis': { resume_text: 'Engineer, 5 years of Go and SQL.' },
    'job-match': { resume_text: 'Backend engineer, Go and Postgres.', job_description: 'Senior Go engineer, remote, EU.' },
    'candidate-screening': { resume_text: 'Backend engineer, Go and Postgres.', job_description: 'Senior Go engineer, remote, EU.' },
    'skill-gap-analysis': { target_role: 'QA', skills: ['SQL'] },
    'career-path': { current_role: 'QA' },
    'interview-questions': { job_title: 'QA' },
    'mock-interview': { message: 'Hi' },
    'answer-feedback': { answer: 'Yes' },
    'resume-rewrite': { resume_text: 'Engineer, 5 years of Go and SQL.' },
    'cover-letter': { resume_text: 'Backend engineer, Go and Postgres.', job_description: 'Senior Go engineer, remote, EU.' },
    'job-description': { job_title: 'QA' },
    'career-coach': { message: 'Hi' },
  };

  it.each(EXPECTED_KEYS)('%s: a short non-blank value of each needed field is enough; blank is not; the schema says what is needed', (key) => {
    const schema = intent(key).inputSchema as Json;
    const minimal = { user_id: 'u-1', ...NEEDS[key] };
    const ok = valid(schema, minimal);
    expect(ok.errors, JSON.stringify(ok.errors)).toBeNull();
    for (const [field, value] of Object.entries(NEEDS[key]!)) {
      if (typeof value !== 'string') continue;
      const blank = valid(schema, { ...minimal, [field]: ' \t\n' });
      expect(blank.ok, `${field} blank`).toBe(false);
      expect(JSON.stringify(blank.errors), `${field} named`).toContain(field);
      expect(valid(schema, { ...minimal, [field]: '' }).ok, `${field} empty`).toBe(false);
      const description = String(((schema.properties as Record<string, Json>)[field] ?? {}).description ?? '');
      if ((schema.required as string[]).includes(field)) expect(description, field).toMatch(/Required: at least one non-whitespace character/);
    }
    expect(schema.description, key).toMatch(/^Needs user_id and /);
    for (const field of Object.keys(NEEDS[key]!)) expect(schema.description, key).toContain(field);
    // No invented minimum length anywhere but user_id (an identifier).
    const minimums = JSON.stringify(schema).match(/"minLength":(\d+)/g) ?? [];
    expect(minimums.every((m) => m === '"minLength":1'), minimums.join()).toBe(true);
  });

  it('a 32-character job description and a 33-character resume are accepted; the maximums still hold', () => {
    const jd = 'Senior Go engineer, remote, EU..';
    const resume = 'Backend engineer, Go and Postgres';
    expect([jd.length, resume.length]).toEqual([32, 33]);
    for (const key of ['job-match', 'candidate-screening', 'cover-letter']) {
      expect(valid(intent(key).inputSchema as Json, { user_id: 'u', resume_text: resume, job_description: jd }).ok, key).toBe(true);
      expect(valid(intent(key).inputSchema as Json, { user_id: 'u', resume_text: resume, job_description: 'x'.repeat(30_001) }).ok, key).toBe(false);
    }
    for (const key of ['resume-analysis', 'resume-rewrite']) {
      expect(valid(intent(key).inputSchema as Json, { user_id: 'u', resume_text: resume }).ok, key).toBe(true);
      expect(valid(intent(key).inputSchema as Json, { user_id: 'u', resume_text: 'x'.repeat(60_001) }).ok, key).toBe(false);
    }
  });

  it('states the alternatives: skill-gap-analysis takes skills or a resume, career-path a role or a resume', () => {
    const gap = intent('skill-gap-analysis').inputSchema as Json;
    expect(valid(gap, { user_id: 'u', target_role: 'Data Engineer', resume_text: RESUME }).ok).toBe(true);
    expect(valid(gap, { user_id: 'u', target_role: 'Data Engineer', skills: ['SQL'] }).ok).toBe(true);
    const path = intent('career-path').inputSchema as Json;
    expect(valid(path, { user_id: 'u', resume_text: RESUME }).ok).toBe(true);
    expect(valid(path, { user_id: 'u', current_role: 'Nurse' }).ok).toBe(true);
    const questions = intent('interview-questions').inputSchema as Json;
    expect(valid(questions, { user_id: 'u', job_description: JOB_DESCRIPTION }).ok).toBe(true);
  });

  it('answer-feedback takes the IntentRequest fields alone: message is the answer when answer is absent; question is optional', () => {
    const schema = intent('answer-feedback').inputSchema as Json;
    expect(valid(schema, { user_id: 'u', message: 'I set up a spike to compare both databases.' }).ok).toBe(true);
    expect(valid(schema, { user_id: 'u', question: 'A conflict?', message: 'I set up a spike.' }).ok).toBe(true);
    expect(valid(schema, { user_id: 'u', answer: 'I set up a spike.' }).ok).toBe(true);
    expect(valid(schema, { user_id: 'u', answer: '', message: 'I set up a spike.' }).ok).toBe(true);
    expect(valid(schema, { user_id: 'u', answer: 'I set up a spike.', message: 'Focus on the result.' }).ok).toBe(true);
    expect(valid(schema, { user_id: 'u' }).ok).toBe(false);
    expect(valid(schema, { user_id: 'u', message: 'x'.repeat(15_001) }).ok).toBe(false);
    expect(schema.required).toEqual(['user_id']);
    expect(schema.description).toMatch(/message/);
    const template = intent('answer-feedback').promptTemplate;
    expect(placeholders(template)).toEqual(expect.arrayContaining(['input.question', 'input.answer', 'input.message']));
    expect(intent('answer-feedback').systemPrompt).toMatch(/when <answer> is empty, <message> holds the answer/);
    expect(intent('answer-feedback').systemPrompt).toMatch(/<question> is empty/);
  });
});

describe('hiring prompt templates', () => {
  it.each(EXPECTED_KEYS)('%s: every {{input.x}} is declared by the input schema or is a common field', (key) => {
    const i = intent(key);
    const declared = Object.keys((i.inputSchema as Json).properties as Json);
    const known = new Set<string>([...declared, ...COMMON_INPUT_FIELDS]);
    const used = inputPlaceholders(i.promptTemplate);
    expect(used.length).toBeGreaterThan(0);
    for (const field of used) expect(known.has(field), `{{input.${field}}}`).toBe(true);
    // Only input fields, context and history are filled in by the runtime.
    for (const p of placeholders(i.promptTemplate)) expect(p.startsWith('input.') || p === 'context' || p === 'history', p).toBe(true);
    // Whatever the intent accepts reaches the model (user_id is for accounting, not the prompt).
    for (const field of declared.filter((f) => f !== 'user_id')) expect(used, `${field} unused`).toContain(field);
    expect(used).not.toContain('user_id');
    // Required fields are always in the prompt.
    for (const field of ((i.inputSchema as Json).required as string[]).filter((f) => f !== 'user_id')) expect(used).toContain(field);
  });

  it('conversational intents read the history and the latest message; the others do not use history', () => {
    for (const i of HIRING_INTENTS) {
      const p = placeholders(i.promptTemplate);
      if (i.conversational) {
        expect(p, i.key).toContain('history');
        expect(p, i.key).toContain('input.message');
        expect(((i.inputSchema as Json).required as string[])).toContain('message');
        expect(i.systemPrompt, i.key).toMatch(/<history>/);
      } else {
        expect(p, i.key).not.toContain('history');
      }
    }
  });

  it('knowledge-heavy intents leave room for retrieved context', () => {
    for (const key of ['job-match', 'candidate-screening', 'job-description', 'interview-questions']) {
      expect(placeholders(intent(key).promptTemplate), key).toContain('context');
      expect(intent(key).systemPrompt, key).toMatch(/<knowledge>/);
    }
  });
});

describe('hiring system prompts', () => {
  // A protected characteristic named anywhere outside the shared rules that forbid using it.
  const PROTECTED =
    /\b(age|aged|ages|ageing|gender\w*|sex|sexual\w*|race|racial|ethnic\w*|colou?r|national origin|nationality|religio\w*|belief|disab\w*|health|pregnan\w*|parental|maternity|marital|married|family status|political|union)\b/i;

  it('the fairness rules name the protected characteristics and forbid using or inferring them', () => {
    for (const word of ['age', 'gender', 'ethnicity', 'religion', 'disability', 'marital', 'sexual orientation', 'pregnancy']) {
      expect(FAIRNESS_RULES).toContain(word);
    }
    expect(FAIRNESS_RULES).toMatch(/never use, infer or speculate/);
    expect(FAIRNESS_RULES).toMatch(/must not influence any score/);
  });

  it.each(EXPECTED_KEYS)('%s: carries the fairness, grounding and JSON rules and uses no protected criterion', (key) => {
    const prompt = intent(key).systemPrompt;
    expect(prompt).toContain(FAIRNESS_RULES);
    expect(prompt).toContain(MATERIAL_RULES);
    expect(prompt).toContain(OUTPUT_RULES);
    expect(prompt).toMatch(/JSON/);
    expect(prompt).toMatch(/When the input is insufficient: \S/);
    expect(prompt.length).toBeGreaterThan(2000);
    const rest = prompt.replace(FAIRNESS_RULES, '').replace(INCLUSIVE_LANGUAGE_RULES, '');
    expect(rest.match(PROTECTED)?.[0], 'protected characteristic outside the fairness rules').toBeUndefined();
    // Each prompt mentions the fields of its own output so the model knows what goes where.
    const top = Object.keys((intent(key).outputSchema as Json).properties as Json);
    const mentioned = top.filter((f) => prompt.includes(f));
    expect(mentioned.length, `fields mentioned: ${mentioned.join(', ')}`).toBeGreaterThanOrEqual(Math.min(3, top.length));
  });

  it('the check catches a prompt that uses a protected characteristic as a criterion', () => {
    const bad = `${FAIRNESS_RULES}\n\nPrefer candidates under a certain age.`;
    expect(bad.replace(FAIRNESS_RULES, '').match(PROTECTED)).not.toBeNull();
  });

  it('prompts are specific to their task', () => {
    expect(intent('job-match').systemPrompt).toMatch(/each requirement|every requirement/i);
    expect(intent('job-match').systemPrompt).toMatch(/evidence/);
    expect(intent('candidate-screening').systemPrompt).toMatch(/knockout/i);
    expect(intent('candidate-screening').systemPrompt).toMatch(/advance.*hold.*reject/s);
    expect(intent('interview-questions').systemPrompt).toMatch(/behavioural/);
    expect(intent('interview-questions').systemPrompt).toMatch(/technical/);
    expect(intent('interview-questions').systemPrompt).toMatch(/what a strong answer demonstrates/);
    expect(intent('answer-feedback').systemPrompt).toMatch(/STAR/);
    expect(intent('resume-rewrite').systemPrompt).toMatch(/Never estimate or invent numbers/);
    expect(intent('job-description').systemPrompt).toContain(INCLUSIVE_LANGUAGE_RULES);
    expect(intent('mock-interview').systemPrompt).toMatch(/one question at a time/);
    expect(intent('career-coach').systemPrompt).toMatch(/follow_up_question/);
  });
});

describe('hiring output schemas', () => {
  it.each(EXPECTED_KEYS)('%s: compiles and is a closed object fit for structured outputs', (key) => {
    const schema = intent(key).outputSchema as Json;
    expect(() => compile(schema)).not.toThrow();
    expect(() => ajv07.compile(schema)).not.toThrow();
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    expect((schema.required as string[]).length).toBeGreaterThan(0);
    for (const [path, node] of walk(schema)) {
      for (const keyword of Object.keys(node)) expect(OUTPUT_KEYWORDS.has(keyword), `${path}: ${keyword}`).toBe(true);
      expect('type' in node || 'anyOf' in node, `${path} has a type`).toBe(true);
      if (isObjectType(node)) {
        const props = Object.keys(node.properties as Json);
        expect(props.length, path).toBeGreaterThan(0);
        expect(node.additionalProperties, path).toBe(false);
        expect([...(node.required as string[])].sort(), `${path}: every property required`).toEqual([...props].sort());
        for (const [name, prop] of Object.entries(node.properties as Record<string, Json>)) {
          expect(typeof prop.description === 'string' && prop.description.length > 5, `${path}/${name} description`).toBe(true);
        }
      }
      if (Array.isArray(node.enum)) expect(node.enum.length, path).toBeGreaterThan(1);
    }
  });

  it.each(EXPECTED_KEYS)('%s: a valid sample passes and invalid ones fail', (key) => {
    const schema = intent(key).outputSchema as Json;
    const c = CASES[key];
    const ok = valid(schema, c.output);
    expect(ok.errors, JSON.stringify(ok.errors)).toBeNull();
    expect(ok.ok).toBe(true);
    expect(ajv07.validate(schema, c.output)).toBe(true);
    // Every top-level field is required, and nothing else is allowed.
    for (const field of schema.required as string[]) expect(valid(schema, without(c.output, field)).ok, `without ${field}`).toBe(false);
    expect(valid(schema, { ...c.output, candidate_age: 41 }).ok).toBe(false);
    expect(valid(schema, 'just text').ok).toBe(false);
    expect(c.badOutputs.length).toBeGreaterThan(1);
    for (const [why, make] of c.badOutputs) expect(valid(schema, make(c.output)).ok, why).toBe(false);
  });

  it('uses the categorical values the API promises', () => {
    const props = (key: string) => (intent(key).outputSchema as Json).properties as Record<string, Json>;
    const itemProps = (key: string, field: string) => ((props(key)[field].items as Json).properties as Record<string, Json>);
    expect(itemProps('resume-analysis', 'skills').level.enum).toEqual(['beginner', 'intermediate', 'advanced', 'expert']);
    expect(props('resume-analysis').score).toMatchObject({ type: 'integer', minimum: 0, maximum: 100 });
    expect(itemProps('job-match', 'requirements').met.enum).toEqual(['yes', 'partial', 'no']);
    expect(props('job-match').overall_score).toMatchObject({ minimum: 0, maximum: 100 });
    expect(props('candidate-screening').recommendation.enum).toEqual(['advance', 'hold', 'reject']);
    expect(props('mock-interview').done.type).toBe('boolean');
    expect(props('mock-interview').feedback_on_last_answer.anyOf).toContainEqual({ type: 'null' });
    expect(props('career-coach').follow_up_question.type).toEqual(['string', 'null']);
    // Nullable values accept null; the conversational first turn has no feedback yet.
    const mock = intent('mock-interview').outputSchema as Json;
    expect(valid(mock, { ...CASES['mock-interview'].output, feedback_on_last_answer: null, question_number: 1 }).ok).toBe(true);
  });
});
