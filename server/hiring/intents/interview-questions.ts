import {
  INPUT_FIELDS,
  LIMITATIONS,
  TEMPLATE_PREAMBLE,
  arrayOf,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  enumOf,
  nonBlankBranch,
  nullableStr,
  obj,
  str,
  strings,
} from '../shared.js';

export const QUESTION_TYPES = ['behavioral', 'technical', 'situational', 'motivational'] as const;
export const QUESTION_DIFFICULTIES = ['easy', 'medium', 'hard'] as const;
export const INTERVIEW_TYPES = ['behavioral', 'technical', 'mixed'] as const;
export const DEFAULT_QUESTION_COUNT = 8;

const systemPrompt = buildSystemPrompt({
  role: 'You are a senior interviewer and hiring-process designer who writes structured, job-related interview questions.',
  task:
    'Write a set of interview questions for the role in <job_title> and <job_description>, mixing behavioural ' +
    'and technical questions, and for each one explain what a strong answer demonstrates so that every ' +
    'interviewer can score candidates against the same standard.',
  method: [
    'Derive the competencies the role needs (technical skills, problem solving, collaboration, ownership, ' +
      'communication...) from the job title and description; each question targets one competency. Summarise the ' +
      'role in role_summary and list the competencies the set covers in competencies_covered.',
    `Write <question_count> questions (${DEFAULT_QUESTION_COUNT} when empty, never more than 20). Follow ` +
      '<interview_type>: "behavioral" - only behavioural questions; "technical" - only technical and ' +
      'role-specific ones; "mixed" or empty - about 40% behavioural ("Tell me about a time..."), 40% technical ' +
      'or role-specific, and the rest situational ("What would you do if...") or motivational.',
    'Cover <focus_areas> first when given. Match difficulty to the seniority the job implies (or ' +
      '<years_experience>): an entry-level role gets mostly easy and medium questions, a senior role mostly medium ' +
      'and hard.',
    'Technical questions test reasoning and trade-offs that matter in the job, not trivia; they must be ' +
      'answerable in a few minutes of conversation.',
    'what_good_answer_shows: the concrete signals of a strong answer (for example "a specific past example, the ' +
      'candidate\'s own actions, a measurable result, trade-offs named"). weak_answer_signals: what would make an ' +
      'answer weak. follow_up: one probing follow-up question.',
    'When <resume> is given, you may tailor up to a third of the questions to probe specific claims in it; the ' +
      'rest stay the same for every candidate.',
    'Every question must be job-related and answerable without sharing personal information.',
  ],
  extra: [
    'Reference knowledge: <knowledge> may contain the organisation\'s competency framework, values or interview ' +
      'guidelines; follow them when present.',
  ],
  insufficient:
    'if the job title and description say too little about the role, write general questions for the most ' +
    'likely interpretation of the title and say in limitations what information would make them specific.',
});

const promptTemplate = `Write interview questions for this role.
${TEMPLATE_PREAMBLE}

<job_title>
{{input.job_title}}
</job_title>

<job_description>
{{input.job_description}}
</job_description>

<years_experience>
{{input.years_experience}}
</years_experience>

<question_count>
{{input.question_count}}
</question_count>

<interview_type>
{{input.interview_type}}
</interview_type>

<focus_areas>
{{input.focus_areas}}
</focus_areas>

<resume>
{{input.resume_text}}
</resume>

<knowledge>
{{context}}
</knowledge>`;

const inputSchema = buildInputSchema({
  needs: 'either job_title or job_description',
  properties: {
    job_title: INPUT_FIELDS.job_title,
    job_description: INPUT_FIELDS.job_description,
    years_experience: INPUT_FIELDS.years_experience,
    resume_text: INPUT_FIELDS.resume_text,
    question_count: {
      type: 'integer',
      minimum: 1,
      maximum: 20,
      description: `How many questions to write (default ${DEFAULT_QUESTION_COUNT}).`,
    },
    interview_type: {
      type: 'string',
      enum: [...INTERVIEW_TYPES],
      description: 'Kind of interview (default mixed).',
    },
    focus_areas: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: 200 },
      maxItems: 10,
      description: 'Competencies or topics to cover first.',
    },
  },
  required: [],
  anyOf: [
    nonBlankBranch('job_title'),
    nonBlankBranch('job_description'),
  ],
});

const outputSchema = obj({
  role_summary: str('One or two sentences on the role the questions were written for.'),
  competencies_covered: strings('Competencies the question set covers.'),
  questions: arrayOf(
    obj({
      question: str('The question, as the interviewer would ask it.'),
      type: enumOf(QUESTION_TYPES, 'Kind of question.'),
      competency: str('The competency it assesses.'),
      difficulty: enumOf(QUESTION_DIFFICULTIES, 'Difficulty for the role\'s seniority.'),
      what_good_answer_shows: str('Concrete signals of a strong answer.'),
      weak_answer_signals: str('What would make an answer weak.'),
      follow_up: nullableStr('One probing follow-up question; null when none is useful.'),
    }),
    'The interview questions.',
    { minItems: 1, maxItems: 20 },
  ),
  limitations: LIMITATIONS,
});

export const interviewQuestionsIntent = defineHiringIntent({
  key: 'interview-questions',
  displayName: 'Interview questions',
  description: 'Writes a structured mix of behavioural and technical interview questions for a role, each with what a good answer shows.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.5,
  cache: null,
});
