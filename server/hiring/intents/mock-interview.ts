import {
  INPUT_FIELDS,
  TEMPLATE_PREAMBLE,
  bool,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  int,
  nullableObj,
  nullableStr,
  obj,
  requiredText,
  str,
  strings,
} from '../shared.js';
import { INTERVIEW_TYPES } from './interview-questions.js';

export const DEFAULT_MOCK_QUESTIONS = 5;

const systemPrompt = buildSystemPrompt({
  role: 'You are a professional, encouraging interviewer running a realistic mock interview so that a candidate can practise.',
  task:
    'Conduct a mock interview for the role in <job_title> and <job_description>, one question at a time. Each ' +
    'turn, read the conversation so far in <history> and the candidate\'s latest message in <message>, then ' +
    'respond as the interviewer and keep the interview moving.',
  method: [
    'First turn (empty history, or the candidate says they are ready): greet briefly, explain the format (about ' +
      `<max_questions> questions, ${DEFAULT_MOCK_QUESTIONS} when empty), and ask question 1. ` +
      'feedback_on_last_answer is null.',
    'Later turns: treat the latest message as the answer to the question you asked last. Put short coaching in ' +
      'feedback_on_last_answer - what worked, what to improve, and one 1-5 score weighing relevance, structure ' +
      '(STAR for behavioural questions), specificity and impact. Then, in reply, acknowledge the answer in a sentence and ask ' +
      'the next question.',
    'Choose questions the way a real interviewer for this role would: follow <interview_type> (mixed when empty), ' +
      'build on earlier answers with a follow-up when an answer was vague, and never repeat a question already ' +
      'asked in the history. Adapt difficulty to how the candidate is doing.',
    'question_number is the number of the question your reply asks, counted from the history (1 for the first). ' +
      'A follow-up on the same topic counts as a new question.',
    'When the message is not an answer (a question about the process, a request to repeat or for a hint), respond ' +
      'helpfully as an interviewer would, keep the same question_number, and set feedback_on_last_answer to null.',
    'done becomes true once the candidate has answered the last question, or when they ask to stop. Then reply ' +
      'thanks them and closes, and final_assessment summarises the overall performance: strengths, the areas to ' +
      'practise, and one concrete tip. final_assessment is null while the interview goes on.',
    'Stay in the interviewer role. Do not reveal model answers unless the candidate asks for help; coaching goes ' +
      'in feedback_on_last_answer, not in reply.',
  ],
  insufficient:
    'if no role is given, ask in your first reply which role the candidate is preparing for and start with a ' +
    'general question; if an answer is too short to judge, say so in the feedback and invite more detail.',
});

const promptTemplate = `Continue the mock interview.
${TEMPLATE_PREAMBLE}

<job_title>
{{input.job_title}}
</job_title>

<job_description>
{{input.job_description}}
</job_description>

<interview_type>
{{input.interview_type}}
</interview_type>

<max_questions>
{{input.max_questions}}
</max_questions>

<history>
{{history}}
</history>

<message>
{{input.message}}
</message>`;

const inputSchema = buildInputSchema({
  needs: 'message',
  properties: {
    message: requiredText(INPUT_FIELDS.message),
    job_title: INPUT_FIELDS.job_title,
    job_description: INPUT_FIELDS.job_description,
    interview_type: {
      type: 'string',
      enum: [...INTERVIEW_TYPES],
      description: 'Kind of interview (default mixed).',
    },
    max_questions: {
      type: 'integer',
      minimum: 1,
      maximum: 15,
      description: `How many questions the interview has (default ${DEFAULT_MOCK_QUESTIONS}).`,
    },
  },
  required: ['message'],
});

const outputSchema = obj({
  reply: str('The interviewer\'s next message to the candidate: a short acknowledgement and the next question, or the closing.'),
  question_number: int('Number of the question the reply asks (1-based); the last one asked when done.', 0, 50),
  feedback_on_last_answer: nullableObj(
    {
      strengths: strings('What worked in the answer.'),
      improvements: strings('Specific ways to make the answer stronger.'),
      score: int('Answer quality from 1 (weak) to 5 (excellent).', 1, 5),
    },
    'Coaching on the answer just given; null on the first turn or when the message was not an answer.',
  ),
  done: bool('True when the interview has ended.'),
  final_assessment: nullableStr('Overall performance summary when done; null while the interview goes on.'),
});

export const mockInterviewIntent = defineHiringIntent({
  key: 'mock-interview',
  displayName: 'Mock interview',
  description: 'Runs a turn-by-turn practice interview for a role, asking one question at a time with feedback on each answer.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  conversational: true,
  temperature: 0.6,
  cache: null,
});
