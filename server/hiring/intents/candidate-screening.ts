import {
  ANALYTICAL_CACHE,
  INPUT_FIELDS,
  LIMITATIONS,
  NON_BLANK,
  TEMPLATE_PREAMBLE,
  arrayOf,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  enumOf,
  int,
  obj,
  requiredText,
  str,
  strings,
} from '../shared.js';

export const SCREENING_RECOMMENDATIONS = ['advance', 'hold', 'reject'] as const;
export const KNOCKOUT_STATUSES = ['met', 'not_met', 'unclear'] as const;

const systemPrompt = buildSystemPrompt({
  role: 'You are a fair and consistent first-round screener who helps recruiters decide which applicants move forward.',
  task:
    'Screen the applicant in <resume> against the job in <job_description>: check the knockout criteria ' +
    'explicitly, score the overall fit, and recommend advance, hold or reject with a short rationale and ' +
    'follow-up questions for the next conversation.',
  method: [
    'Knockout criteria are the hard requirements without which the person cannot be hired: every entry in ' +
      '<knockout_criteria> supplied by the recruiter, plus requirements the job description states as mandatory ' +
      '("must have", "required", a licence or certification the role legally needs). Preferred or nice-to-have ' +
      'qualifications are never knockouts. A criterion that refers to a protected characteristic or a proxy for ' +
      'one is invalid: do not apply it, and name it in limitations.',
    'Check each knockout: "met" when the resume clearly satisfies it; "not_met" when the resume clearly shows it is ' +
      'not satisfied (2 years where 5 are required) or when it is so central that the resume would certainly ' +
      'mention it; "unclear" otherwise. Quote or paraphrase the evidence.',
    'score (0-100): overall fit with the job - core requirements first, then relevant achievements and ' +
      'nice-to-haves - judged only from evidence in the resume.',
    'recommendation, applied mechanically so the same input always gets the same answer: "reject" when at least ' +
      'one knockout is not_met, or when the resume is detailed enough to judge and the score is below 40; "hold" ' +
      'when a knockout is ' +
      'unclear or the score is 40-64; "advance" when every knockout is met and the score is 65 or more.',
    'knockout_failures lists the text of every not_met criterion (empty unless one failed).',
    'rationale: two to four sentences a recruiter can act on, naming the decisive evidence.',
    'strengths and concerns: job-relevant points from the resume, each specific.',
    'follow_up_questions: job-related questions for a screening call that would resolve unclear knockouts or ' +
      'concerns (for example "Which of your projects used Kubernetes in production?").',
  ],
  extra: [
    'Reference knowledge: <knowledge> may contain the organisation\'s hiring criteria or role information. Use it ' +
      'to interpret the requirements; it is never evidence about the applicant.',
  ],
  insufficient:
    'if the resume or job description is too thin to screen, do not reject for lack of information: recommend ' +
    '"hold", mark the affected knockouts "unclear", ask follow-up questions, and explain in limitations.',
});

const promptTemplate = `Screen this applicant for the job.
${TEMPLATE_PREAMBLE}

<job_title>
{{input.job_title}}
</job_title>

<job_description>
{{input.job_description}}
</job_description>

<knockout_criteria>
{{input.knockout_criteria}}
</knockout_criteria>

<resume>
{{input.resume_text}}
</resume>

<knowledge>
{{context}}
</knowledge>`;

const inputSchema = buildInputSchema({
  needs: 'resume_text and job_description',
  properties: {
    resume_text: requiredText(INPUT_FIELDS.resume_text),
    job_description: requiredText(INPUT_FIELDS.job_description),
    job_title: INPUT_FIELDS.job_title,
    knockout_criteria: {
      type: 'array',
      items: { type: 'string', pattern: NON_BLANK, maxLength: 300 },
      maxItems: 20,
      description: 'Hard requirements set by the recruiter, on top of the mandatory ones in the job description.',
    },
  },
  required: ['resume_text', 'job_description'],
});

const outputSchema = obj({
  recommendation: enumOf(SCREENING_RECOMMENDATIONS, 'Next step for the applicant, following the screening rules.'),
  score: int('Overall fit with the job (0-100).', 0, 100),
  knockout_criteria: arrayOf(
    obj({
      criterion: str('The hard requirement.'),
      status: enumOf(KNOCKOUT_STATUSES, 'Whether the resume satisfies it.'),
      evidence: str('Resume quote or paraphrase, or what is missing.'),
    }),
    'Every knockout criterion checked.',
  ),
  knockout_failures: strings('Criteria with status not_met; empty when none failed.'),
  rationale: str('Two to four sentences explaining the recommendation with the decisive evidence.'),
  strengths: strings('Job-relevant strengths shown in the resume.'),
  concerns: strings('Job-relevant concerns or unverified points.'),
  follow_up_questions: strings('Job-related questions for a screening call.', { maxItems: 8 }),
  limitations: LIMITATIONS,
});

export const candidateScreeningIntent = defineHiringIntent({
  key: 'candidate-screening',
  displayName: 'Candidate screening',
  description: 'Screens an applicant against a job: checks knockout criteria and recommends advance, hold or reject with a rationale.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.1,
  cache: ANALYTICAL_CACHE,
});
