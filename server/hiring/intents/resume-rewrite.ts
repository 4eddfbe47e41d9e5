import {
  INPUT_FIELDS,
  LIMITATIONS,
  TEMPLATE_PREAMBLE,
  arrayOf,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  obj,
  requiredText,
  str,
  strings,
} from '../shared.js';

const systemPrompt = buildSystemPrompt({
  role: 'You are an expert resume writer who makes resumes clearer and more compelling without ever changing the facts.',
  task:
    'Rewrite the resume in <resume> so that it is clearer, more concise and more achievement-oriented, tailored ' +
    'to <target_role> and <job_description> when they are given, while keeping every fact true to the original.',
  method: [
    'Keep the facts: the same employers, job titles, dates, degrees, certifications, technologies and numbers. Do ' +
      'not add skills, tools, responsibilities or achievements that are not in the original, do not upgrade ' +
      'titles, and do not inflate scope.',
    'Improve the writing: lead each bullet with a strong action verb, show what was done, how, and with what ' +
      'result; cut filler and repetition; past tense for previous roles and present tense for the current one; ' +
      'consistent formatting; reverse-chronological order.',
    'Quantify impact only with numbers already in the resume. Where a bullet would be stronger with a metric that ' +
      'is not given, keep it without a number and add an entry to quantification_opportunities with the question ' +
      'the person should answer (for example "How many customers used the feature?"). Never estimate or invent ' +
      'numbers, percentages, team sizes, budgets or timeframes.',
    'Tailoring: reorder and emphasise existing relevant experience and use the job description\'s terminology ' +
      'only for skills the resume actually shows. Requirements the resume does not show go in limitations, not ' +
      'into the resume.',
    'Write a professional_summary of two or three sentences, drawn only from the resume, and put it at the top ' +
      'of the rewritten resume.',
    'Leave out personal details that are not relevant to the job; keep contact lines as given (they may be ' +
      'redaction markers).',
    'rewritten_resume: the complete resume as plain text with simple markdown - "## " section headings and "- " ' +
      'bullets. changes: the most significant edits (at most 15), each with the original text, the revision and ' +
      'the reason.',
  ],
  insufficient:
    'if the text is not a resume or is too short to rewrite meaningfully, rewrite what is there, keep ' +
    'changes minimal, and explain in limitations what the person should add.',
});

const promptTemplate = `Rewrite this resume.
${TEMPLATE_PREAMBLE}

<target_role>
{{input.target_role}}
</target_role>

<job_description>
{{input.job_description}}
</job_description>

<resume>
{{input.resume_text}}
</resume>`;

const inputSchema = buildInputSchema({
  needs: 'resume_text',
  properties: {
    resume_text: requiredText(INPUT_FIELDS.resume_text),
    target_role: INPUT_FIELDS.target_role,
    job_description: INPUT_FIELDS.job_description,
  },
  required: ['resume_text'],
});

const outputSchema = obj({
  rewritten_resume: str('The complete rewritten resume as plain text with markdown headings and bullets.'),
  professional_summary: str('Two or three sentence summary drawn only from the resume.'),
  changes: arrayOf(
    obj({
      section: str('Section of the resume the edit is in.'),
      original: str('The original text.'),
      revised: str('The rewritten text.'),
      reason: str('Why the revision is better.'),
    }),
    'The most significant edits.',
    { maxItems: 15 },
  ),
  quantification_opportunities: arrayOf(
    obj({
      statement: str('The bullet or claim that would benefit from a number.'),
      question: str('What the person should find out or measure to quantify it.'),
    }),
    'Places where a metric would strengthen the resume but none was given.',
  ),
  keywords_emphasised: strings('Terms from the target role or job description that the resume genuinely supports and now features.'),
  limitations: LIMITATIONS,
});

export const resumeRewriteIntent = defineHiringIntent({
  key: 'resume-rewrite',
  displayName: 'Resume rewrite',
  description: 'Rewrites a resume to be clearer and achievement-oriented, optionally tailored to a role, without changing or inventing facts.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.4,
  cache: null,
});
