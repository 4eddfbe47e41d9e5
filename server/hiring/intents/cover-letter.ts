import {
  INPUT_FIELDS,
  LIMITATIONS,
  TEMPLATE_PREAMBLE,
  arrayOf,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  int,
  obj,
  requiredText,
  str,
  strings,
} from '../shared.js';

export const COVER_LETTER_TONES = ['professional', 'warm', 'enthusiastic', 'concise'] as const;

const systemPrompt = buildSystemPrompt({
  role: 'You are a skilled career writer who drafts tailored, honest and specific cover letters.',
  task:
    'Write a cover letter for the candidate in <resume> applying to the job in <job_description>, connecting ' +
    'their real experience to the job\'s most important requirements.',
  method: [
    'Pick the two to four requirements that matter most for the job and, for each, the strongest matching ' +
      'evidence in the resume. Record every claim the letter makes, with its resume source, in key_points.',
    'Structure: a greeting (to <hiring_manager_name> when given, otherwise "Dear Hiring Manager"); an opening ' +
      'that names the role and gives a specific reason for interest drawn from the job description or ' +
      '<company_name>; one or two body paragraphs with concrete evidence; a short closing with a call to action; ' +
      'a sign-off. Aim for 250-400 words.',
    'Tone: follow <tone> (professional when empty). Sound like a capable person, not a template: no clichés such ' +
      'as "I am writing to express my interest" or "I am the perfect fit", and no flattery.',
    'Claim only what the resume shows. If the candidate lacks a requirement, do not claim it; you may mention ' +
      'genuinely related experience or a willingness to learn. Do not invent facts about the company.',
    'Where a needed detail is missing (the company name, the candidate\'s name), use a bracketed placeholder such ' +
      'as [Company Name] and list each placeholder in placeholders.',
    'word_count is the number of words in cover_letter.',
  ],
  extra: [
    'Reference knowledge: <knowledge> may contain information about the company or team; you may use it for the ' +
      'reason for interest, never as facts about the candidate.',
  ],
  insufficient:
    'if the resume offers little that matches the job, write a shorter, honest letter built on what does ' +
    'transfer, and explain in limitations what is missing.',
});

const promptTemplate = `Write a cover letter for this application.
${TEMPLATE_PREAMBLE}

<job_title>
{{input.job_title}}
</job_title>

<company_name>
{{input.company_name}}
</company_name>

<hiring_manager_name>
{{input.hiring_manager_name}}
</hiring_manager_name>

<tone>
{{input.tone}}
</tone>

<job_description>
{{input.job_description}}
</job_description>

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
    company_name: { type: 'string', maxLength: 200, description: 'The employer the letter is addressed to.' },
    hiring_manager_name: { type: 'string', maxLength: 200, description: 'Who the letter is addressed to, when known.' },
    tone: { type: 'string', enum: [...COVER_LETTER_TONES], description: 'Tone of the letter (default professional).' },
  },
  required: ['resume_text', 'job_description'],
});

const outputSchema = obj({
  cover_letter: str('The complete cover letter, greeting to sign-off, as plain text with paragraphs separated by blank lines.'),
  key_points: arrayOf(
    obj({
      requirement: str('The job requirement the point addresses.'),
      claim: str('What the letter says.'),
      resume_evidence: str('The resume content that supports it.'),
    }),
    'Every claim the letter makes about the candidate, traced to the resume.',
  ),
  placeholders: strings('Bracketed placeholders in the letter the candidate must fill in; empty when none.'),
  word_count: int('Number of words in cover_letter.', 0, 2000),
  limitations: LIMITATIONS,
});

export const coverLetterIntent = defineHiringIntent({
  key: 'cover-letter',
  displayName: 'Cover letter',
  description: 'Drafts a tailored cover letter that links the candidate\'s real experience to the job\'s key requirements.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.7,
  cache: null,
});
