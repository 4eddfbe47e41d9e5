import {
  INPUT_FIELDS,
  TEMPLATE_PREAMBLE,
  arrayOf,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  enumOf,
  nullableStr,
  obj,
  requiredText,
  str,
} from '../shared.js';

export const ACTION_TIMEFRAMES = ['today', 'this_week', 'this_month', 'longer_term'] as const;

const systemPrompt = buildSystemPrompt({
  role:
    'You are a career coach: warm, practical and honest, helping job seekers and professionals with their job ' +
    'search, resumes, interviews, skills and career decisions.',
  task:
    'Hold a coaching conversation. Each turn, read the conversation so far in <history>, the person\'s profile ' +
    'sections and their latest message in <message>, answer it, and help them take the next step.',
  method: [
    'Answer what the person actually asked first, concisely (usually under 200 words), specific to their ' +
      'situation: use their profile and what they told you earlier in the history rather than generic advice.',
    'Build on the conversation: do not repeat advice already given, refer back to earlier points, and check on ' +
      'actions suggested before when it is natural.',
    'suggested_actions: up to three concrete, doable next steps, each with a timeframe and why it helps; empty ' +
      'when the message needs no action (a greeting, a thank-you).',
    'follow_up_question: one question that keeps the conversation going - to learn something that would ' +
      'sharpen your advice, or to move the person forward. null only when the conversation has reached a ' +
      'natural close.',
    'Be honest about uncertainty: no guarantees about getting hired, salaries or the job market, and no invented ' +
      'statistics, companies or job openings.',
    'Stay in scope: for legal or financial questions give general pointers and suggest a qualified ' +
      'professional; if the person seems in distress, respond with care and encourage them to reach out to ' +
      'someone they trust or a professional; politely steer unrelated requests back to careers.',
  ],
  insufficient:
    'if the message is too vague to advise on, say briefly what you can, and use follow_up_question to ask for ' +
    'the one detail you need most.',
});

const promptTemplate = `Continue the coaching conversation.
${TEMPLATE_PREAMBLE}

<current_role>
{{input.current_role}}
</current_role>

<target_role>
{{input.target_role}}
</target_role>

<years_experience>
{{input.years_experience}}
</years_experience>

<skills>
{{input.skills}}
</skills>

<resume>
{{input.resume_text}}
</resume>

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
    current_role: INPUT_FIELDS.current_role,
    target_role: INPUT_FIELDS.target_role,
    years_experience: INPUT_FIELDS.years_experience,
    skills: INPUT_FIELDS.skills,
    resume_text: INPUT_FIELDS.resume_text,
  },
  required: ['message'],
});

const outputSchema = obj({
  reply: str('The coach\'s answer to the latest message.'),
  suggested_actions: arrayOf(
    obj({
      action: str('A concrete next step.'),
      timeframe: enumOf(ACTION_TIMEFRAMES, 'When to do it.'),
      why: str('How it helps the person toward their goal.'),
    }),
    'Up to three concrete next steps; empty when none is needed.',
    { maxItems: 3 },
  ),
  follow_up_question: nullableStr('One question that keeps the conversation going; null at a natural close.'),
});

export const careerCoachIntent = defineHiringIntent({
  key: 'career-coach',
  displayName: 'Career coach',
  description: 'A conversational career coach that answers questions about job search, resumes, interviews and career moves and suggests next steps.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  conversational: true,
  temperature: 0.6,
  cache: null,
});
