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
  nullableNum,
  obj,
  requiredText,
  str,
  strings,
} from '../shared.js';

export const SENIORITY_LEVELS = ['entry', 'junior', 'mid', 'senior', 'lead', 'principal', 'executive', 'unclear'] as const;

const systemPrompt = buildSystemPrompt({
  role: 'You are an experienced recruiter and career advisor who reviews resumes for a hiring platform.',
  task:
    'Analyse the resume in <resume> and produce an evidence-based assessment of the profile: what the person has ' +
    'done, which skills the resume demonstrates and at what level, how senior the experience is, what is strong, ' +
    'what is missing, and how the resume could be improved. When <target_role> is given, judge relevance, ' +
    'strengths and gaps against that role; otherwise assess the resume on its own terms.',
  method: [
    'Read the whole resume first and reconstruct the work history (role, employer, dates, scope) before judging anything.',
    'skills: list the skills the resume actually demonstrates, each with a short quote or paraphrase as evidence. ' +
      'Rate the level from the evidence: beginner = mentioned or coursework only; intermediate = used in real work; ' +
      'advanced = used extensively across roles or years with clear results; expert = led, designed or taught others ' +
      'with recognised depth. A skill that only appears in a list, with no usage, is at most beginner and its ' +
      'evidence says so.',
    'seniority: infer from scope, ownership, leadership and impact, not from years alone; use "unclear" when the ' +
      'resume does not show enough.',
    'years_experience_estimate: add up the professional experience from the dates in the work history, counting ' +
      'overlapping periods once; null when the dates do not allow an estimate. Education dates are not used for ' +
      'anything.',
    'strengths: the most compelling points for an employer, each backed by the resume. gaps: what is weak or ' +
      'missing (no measurable outcomes, vague responsibilities, missing dates, skills the target role needs that ' +
      'are not shown).',
    'red_flags: only verifiable, job-relevant concerns inside the document, such as contradictory or overlapping ' +
      'dates, a title that does not fit the described responsibilities, or claims with no supporting detail. A gap ' +
      'in employment or a career change is not a red flag by itself, and you never speculate about its reasons. ' +
      'Phrase each flag as something to clarify, not as a verdict.',
    'score (0-100): the strength of the resume as a hiring document - clarity, evidence of impact, depth of ' +
      'experience and, when given, relevance to the target role. Calibrate: 90-100 exceptional, 70-89 strong, ' +
      '50-69 adequate with notable gaps, below 50 weak or too little information.',
    'suggestions: concrete, actionable edits the person can make, referring to specific sections or bullets.',
  ],
  insufficient:
    'if the text is not a resume or is too thin to assess, say so in summary and limitations, return only what ' +
    'the text supports, use seniority "unclear", and keep the score below 40.',
});

const promptTemplate = `Analyse this resume.
${TEMPLATE_PREAMBLE}

<target_role>
{{input.target_role}}
</target_role>

<resume>
{{input.resume_text}}
</resume>`;

const inputSchema = buildInputSchema({
  needs: 'resume_text',
  properties: {
    resume_text: requiredText(INPUT_FIELDS.resume_text),
    target_role: INPUT_FIELDS.target_role,
  },
  required: ['resume_text'],
});

const outputSchema = obj({
  summary: str('Two to four sentences summarising the profile: background, focus and level.'),
  strengths: strings('Strongest points for an employer, each backed by the resume.'),
  gaps: strings('Weaknesses or missing information in the resume, including skills the target role needs that are not shown.'),
  skills: arrayOf(
    obj({
      name: str('The skill, tool or competency.'),
      level: enumOf(SKILL_LEVELS, 'Demonstrated level, judged from the evidence.'),
      evidence: str('Where the resume shows it (short quote or paraphrase), or "listed only".'),
    }),
    'Skills the resume demonstrates.',
  ),
  seniority: enumOf(SENIORITY_LEVELS, 'Seniority suggested by scope, ownership and impact; "unclear" when not enough is shown.'),
  years_experience_estimate: nullableNum(
    'Years of professional experience computed from the work history dates; null when the dates do not allow it.',
    0,
    70,
  ),
  score: int('Overall strength of the resume as a hiring document (0-100).', 0, 100),
  red_flags: strings('Verifiable, job-relevant inconsistencies to clarify; empty when there are none.'),
  suggestions: strings('Concrete improvements to the resume.'),
  limitations: LIMITATIONS,
});

export const resumeAnalysisIntent = defineHiringIntent({
  key: 'resume-analysis',
  displayName: 'Resume analysis',
  description: 'Assesses a resume: summary, demonstrated skills with levels, seniority, strengths, gaps, red flags and a quality score.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.2,
  cache: ANALYTICAL_CACHE,
});
