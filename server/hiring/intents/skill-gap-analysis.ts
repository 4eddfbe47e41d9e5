import {
  ANALYTICAL_CACHE,
  INPUT_FIELDS,
  LIMITATIONS,
  SKILL_LEVELS,
  TEMPLATE_PREAMBLE,
  arrayOf,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  enumOf,
  int,
  nonBlankBranch,
  nullableInt,
  obj,
  requiredText,
  str,
  strings,
} from '../shared.js';

export const SKILL_IMPORTANCE = ['essential', 'important', 'nice_to_have'] as const;
export const CURRENT_SKILL_LEVELS = ['none', ...SKILL_LEVELS] as const;
export const GAP_SEVERITIES = ['none', 'small', 'moderate', 'large'] as const;
export const PRIORITIES = ['high', 'medium', 'low'] as const;

const systemPrompt = buildSystemPrompt({
  role: 'You are a career development advisor who specialises in skills assessment and practical learning plans.',
  task:
    'Compare what the person can do today (from <skills> and/or <resume>) with what <target_role> requires, ' +
    'identify the gaps, and produce a prioritised plan to close them.',
  method: [
    'Decide the skills the target role requires. When <job_description> is given, take them from it. Otherwise ' +
      'use widely accepted expectations for that role at the level implied by the input, and note in limitations ' +
      'that general role expectations were used. Rate each as essential, important or nice_to_have.',
    'Rate the person\'s current level for each required skill from the evidence: skills shown through work in the ' +
      'resume are rated like a recruiter would (beginner / intermediate / advanced / expert); skills that only ' +
      'appear in <skills> are self-reported - accept them as present, rate them conservatively (beginner or ' +
      'intermediate) unless the resume shows more, and write "self-reported" as the evidence; use "none" when ' +
      'nothing shows the skill.',
    'gap_severity compares current and required level: none, small (one level short), moderate (two levels), ' +
      'large (three or more, or absent while essential).',
    'learning_plan: one entry per skill with a gap, ordered by priority (high = essential with a moderate or large ' +
      'gap). Give concrete actions - a portfolio project, practice with a specific technique, reading the official ' +
      'documentation, a certification only where the field expects one - and describe kinds of resources instead ' +
      'of inventing course names, providers or links. estimated_weeks assumes part-time study alongside a job; ' +
      'null when it cannot be estimated.',
    'strengths: existing skills and experience that transfer to the target role.',
    'readiness_score (0-100): how ready the person is for the role today; mostly driven by essential skills.',
    'summary: two to four sentences on readiness and the most important gaps.',
  ],
  insufficient:
    'if the skills or resume say too little to rate levels, rate conservatively, keep readiness_score low, and ' +
    'ask in limitations for the details that would sharpen the analysis.',
});

const promptTemplate = `Analyse the skill gap between this person and the target role.
${TEMPLATE_PREAMBLE}

<target_role>
{{input.target_role}}
</target_role>

<current_role>
{{input.current_role}}
</current_role>

<years_experience>
{{input.years_experience}}
</years_experience>

<skills>
{{input.skills}}
</skills>

<resume>
{{input.resume_text}}
</resume>

<job_description>
{{input.job_description}}
</job_description>`;

const inputSchema = buildInputSchema({
  needs: 'target_role, plus either skills (at least one) or resume_text',
  properties: {
    target_role: requiredText(INPUT_FIELDS.target_role),
    skills: INPUT_FIELDS.skills,
    resume_text: INPUT_FIELDS.resume_text,
    current_role: INPUT_FIELDS.current_role,
    years_experience: INPUT_FIELDS.years_experience,
    job_description: INPUT_FIELDS.job_description,
  },
  required: ['target_role'],
  anyOf: [
    { required: ['skills'], properties: { skills: { type: 'array', minItems: 1 } } },
    nonBlankBranch('resume_text'),
  ],
});

const outputSchema = obj({
  target_role: str('The role the analysis is for.'),
  readiness_score: int('How ready the person is for the target role today (0-100).', 0, 100),
  skills: arrayOf(
    obj({
      skill: str('A skill the target role requires.'),
      importance: enumOf(SKILL_IMPORTANCE, 'How much the role depends on it.'),
      required_level: enumOf(SKILL_LEVELS, 'Level the role needs.'),
      current_level: enumOf(CURRENT_SKILL_LEVELS, 'Level the evidence shows today.'),
      gap_severity: enumOf(GAP_SEVERITIES, 'Distance between current and required level.'),
      evidence: str('Where the current level comes from: resume quote, "self-reported" or "not shown".'),
    }),
    'Skills the target role requires, each compared with the person\'s current level.',
  ),
  learning_plan: arrayOf(
    obj({
      skill: str('The skill to develop.'),
      priority: enumOf(PRIORITIES, 'Order of attack.'),
      why_it_matters: str('Why the target role needs it.'),
      actions: strings('Concrete steps to close the gap.', { minItems: 1 }),
      estimated_weeks: nullableInt('Part-time weeks to close the gap; null when it cannot be estimated.', 1, 104),
    }),
    'Prioritised steps to close the gaps, highest priority first.',
  ),
  strengths: strings('Existing skills and experience that transfer to the target role.'),
  summary: str('Two to four sentences on readiness and the most important gaps.'),
  limitations: LIMITATIONS,
});

export const skillGapAnalysisIntent = defineHiringIntent({
  key: 'skill-gap-analysis',
  displayName: 'Skill gap analysis',
  description: 'Compares a person\'s skills with a target role and returns the gaps with a prioritised learning plan.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.2,
  cache: ANALYTICAL_CACHE,
});
