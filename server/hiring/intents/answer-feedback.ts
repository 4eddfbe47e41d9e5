import {
  ANALYTICAL_CACHE,
  INPUT_FIELDS,
  LIMITATIONS,
  TEMPLATE_PREAMBLE,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  enumOf,
  int,
  nonBlankBranch,
  obj,
  str,
  strings,
} from '../shared.js';

export const ANSWER_QUESTION_TYPES = ['behavioral', 'technical', 'situational', 'other'] as const;
export const STAR_RATINGS = ['missing', 'weak', 'adequate', 'strong', 'not_applicable'] as const;
export const RELEVANCE_LEVELS = ['high', 'medium', 'low'] as const;

const starPart = (name: string, focus: string) =>
  obj(
    {
      rating: enumOf(STAR_RATINGS, `How well the answer covers the ${name}.`),
      feedback: str(`What the answer says about the ${name} (${focus}) and how to improve it.`),
    },
    `The ${name} part of STAR.`,
  );

const systemPrompt = buildSystemPrompt({
  role: 'You are an interview coach who gives candid, constructive feedback on interview answers.',
  task:
    'Evaluate the candidate\'s answer in <answer> to the interview question in <question> using the STAR method ' +
    '(Situation, Task, Action, Result), and show how to make it stronger.',
  method: [
    'Find the answer: it is in <answer>; when <answer> is empty, <message> holds the answer. When both are given, ' +
      '<message> is the candidate\'s note on what they want feedback on: follow it, but judge only <answer>. When ' +
      '<question> is empty, the question was not given: infer the most likely question from the answer, judge ' +
      'relevance against it, and say in limitations that the question was inferred.',
    'Classify the question: behavioral (past experience, "Tell me about a time..."), technical, situational ' +
      '(hypothetical) or other.',
    'Rate each STAR part as missing, weak, adequate or strong. Situation: concise, relevant context. Task: the ' +
      'candidate\'s own responsibility or goal. Action: what the candidate personally did - specific steps and ' +
      'decisions, "I" rather than "we". Result: the outcome, quantified where possible, and what was learned. For ' +
      'technical or situational questions STAR applies only partly: rate the parts that do not fit as ' +
      'not_applicable and judge correctness, reasoning and trade-offs instead.',
    'relevance: does the answer address the question actually asked (high, medium, low)?',
    'overall_score (0-100): 85-100 an answer that would impress, 70-84 solid, 50-69 needs work, below 50 weak or ' +
      'off-topic. When <job_title> is given, judge against what that role needs.',
    'strengths and improvements: specific, actionable points that quote or refer to the answer; never generic ' +
      'advice like "be more confident".',
    'improved_answer: a stronger version that uses only facts present in the answer. Where a detail is missing ' +
      '(a number, a timeframe, the outcome), put a bracketed placeholder such as [number of users] for the ' +
      'candidate to fill in instead of inventing it.',
    'summary: two or three sentences the candidate can act on.',
  ],
  insufficient:
    'if the answer is empty, a few words, or unrelated to the question, say so in summary, rate the STAR parts ' +
    'missing, keep the score low, and make improved_answer an outline with placeholders.',
});

const promptTemplate = `Give feedback on this interview answer.
${TEMPLATE_PREAMBLE}

<job_title>
{{input.job_title}}
</job_title>

<question>
{{input.question}}
</question>

<answer>
{{input.answer}}
</answer>

<message>
{{input.message}}
</message>`;

// The answer comes as `answer` or, from clients that send only the common IntentRequest fields,
// as `message`; without a question the model infers it from the answer (and says so).
const inputSchema = buildInputSchema({
  needs: 'the answer: answer, or message when answer is absent (at least one non-whitespace character)',
  properties: {
    question: {
      type: 'string',
      maxLength: 2_000,
      description: 'The interview question that was asked. Optional: without it the question is inferred from the answer (noted in limitations).',
    },
    answer: {
      type: 'string',
      maxLength: 15_000,
      description: 'The candidate\'s answer, as spoken or written. Needed unless message holds the answer.',
    },
    message: {
      ...INPUT_FIELDS.message,
      maxLength: 15_000,
      description: 'The candidate\'s answer when answer is absent or blank; with an answer, a note on what to give feedback on.',
    },
    job_title: INPUT_FIELDS.job_title,
  },
  required: [],
  anyOf: [nonBlankBranch('answer'), nonBlankBranch('message')],
});

const outputSchema = obj({
  question_type: enumOf(ANSWER_QUESTION_TYPES, 'Kind of question that was asked.'),
  overall_score: int('Quality of the answer (0-100).', 0, 100),
  relevance: enumOf(RELEVANCE_LEVELS, 'How directly the answer addresses the question.'),
  star: obj(
    {
      situation: starPart('situation', 'context'),
      task: starPart('task', 'own responsibility or goal'),
      action: starPart('action', 'what the candidate personally did'),
      result: starPart('result', 'outcome and learning'),
    },
    'STAR breakdown of the answer.',
  ),
  strengths: strings('What the answer does well.'),
  improvements: strings('Specific, actionable improvements.'),
  improved_answer: str('A stronger version using only the answer\'s facts, with [placeholders] for missing details.'),
  summary: str('Two or three sentences of feedback the candidate can act on.'),
  limitations: LIMITATIONS,
});

export const answerFeedbackIntent = defineHiringIntent({
  key: 'answer-feedback',
  displayName: 'Answer feedback',
  description: 'Scores an interview answer with a STAR breakdown and suggests a stronger version that keeps to the facts given.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.3,
  cache: ANALYTICAL_CACHE,
});
