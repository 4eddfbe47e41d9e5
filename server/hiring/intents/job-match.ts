import {
  ANALYTICAL_CACHE,
  INPUT_FIELDS,
  LIMITATIONS,
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

export const MATCH_VERDICTS = ['strong_match', 'good_match', 'partial_match', 'weak_match'] as const;
export const REQUIREMENT_IMPORTANCE = ['must_have', 'nice_to_have'] as const;
export const REQUIREMENT_MET = ['yes', 'partial', 'no'] as const;

const systemPrompt = buildSystemPrompt({
  role: 'You are a meticulous hiring analyst who compares a candidate\'s resume with a job description.',
  task:
    'Decide how well the resume in <resume> matches the job in <job_description> by checking every requirement ' +
    'of the job against evidence in the resume, then score the overall match.',
  method: [
    'Extract the requirements from the job description: each distinct skill, experience level, domain knowledge, ' +
      'responsibility or qualification, written as a short phrase. Mark importance from the wording: "required", ' +
      '"must", "you have" -> must_have; "nice to have", "bonus", "preferred", "a plus" -> nice_to_have; when the ' +
      'wording is unclear, core responsibilities are must_have.',
    'For each requirement, look for evidence in the resume. met = "yes" when the resume clearly shows it; ' +
      '"partial" when it shows something adjacent or less than asked (a similar tool, 3 years where 5 are ' +
      'required); "no" when nothing supports it. evidence quotes or paraphrases the resume, or says "No evidence ' +
      'in the resume". Never count a requirement as met because it is plausible for someone with that job title.',
    'Give each requirement a score from 0 to 100 for how fully it is met (yes: 80-100, partial: 30-79, no: 0-29).',
    'overall_score (0-100): weigh must_have requirements about twice as heavily as nice_to_have ones. An unmet ' +
      'must_have caps the overall score at 70; several unmet must_haves keep it below 50.',
    'verdict follows the score: strong_match 80-100 with no unmet must_have; good_match 65-79; partial_match ' +
      '40-64; weak_match below 40.',
    'matched_skills and missing_skills name the skills the job asks for that the resume does and does not show. ' +
      'transferable_strengths are relevant things in the resume the job description does not ask for explicitly.',
    'If <years_experience> is given, treat it as the candidate\'s own claim; when it conflicts with the dates in ' +
      'the resume, rely on the resume and mention the conflict in limitations.',
    'summary: two to four sentences a recruiter can read on its own, naming the decisive matches and gaps.',
  ],
  extra: [
    'Reference knowledge: <knowledge> may contain the organisation\'s own material (role levelling guides, team ' +
      'descriptions, hiring criteria). Use it to interpret the requirements; it is never evidence about the candidate.',
  ],
  insufficient:
    'if the job description has no identifiable requirements or the resume has too little detail, assess what ' +
    'you can, keep the scores conservative, and say what is missing in limitations.',
});

const promptTemplate = `Compare this resume with the job description.
${TEMPLATE_PREAMBLE}

<job_title>
{{input.job_title}}
</job_title>

<job_description>
{{input.job_description}}
</job_description>

<resume>
{{input.resume_text}}
</resume>

<years_experience>
{{input.years_experience}}
</years_experience>

<knowledge>
{{context}}
</knowledge>`;

const inputSchema = buildInputSchema({
  needs: 'resume_text and job_description',
  properties: {
    resume_text: requiredText(INPUT_FIELDS.resume_text),
    job_description: requiredText(INPUT_FIELDS.job_description),
    job_title: INPUT_FIELDS.job_title,
    years_experience: INPUT_FIELDS.years_experience,
  },
  required: ['resume_text', 'job_description'],
});

const outputSchema = obj({
  overall_score: int('How well the resume matches the job (0-100), must-haves weighted double.', 0, 100),
  verdict: enumOf(MATCH_VERDICTS, 'Match category, consistent with overall_score.'),
  requirements: arrayOf(
    obj({
      requirement: str('The requirement, as a short phrase taken from the job description.'),
      importance: enumOf(REQUIREMENT_IMPORTANCE, 'How the job description weighs it.'),
      met: enumOf(REQUIREMENT_MET, 'Whether the resume shows it.'),
      evidence: str('Resume quote or paraphrase supporting the judgement, or "No evidence in the resume".'),
      score: int('How fully the requirement is met (0-100).', 0, 100),
    }),
    'Every requirement of the job, checked against the resume.',
  ),
  matched_skills: strings('Skills the job asks for that the resume shows.'),
  missing_skills: strings('Skills the job asks for that the resume does not show.'),
  transferable_strengths: strings('Relevant strengths in the resume the job description does not ask for explicitly.'),
  summary: str('Two to four sentences on the decisive matches and gaps.'),
  limitations: LIMITATIONS,
});

export const jobMatchIntent = defineHiringIntent({
  key: 'job-match',
  displayName: 'Job match',
  description: 'Scores how well a resume matches a job description, requirement by requirement, with evidence from the resume.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.2,
  cache: ANALYTICAL_CACHE,
});
