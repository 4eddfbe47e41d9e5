// The built-in `hiring` domain: its description and its 12 intents, in the order they are listed.
import type { IntentDefinition } from '../intents/intent-definition.js';
import { answerFeedbackIntent } from './intents/answer-feedback.js';
import { candidateScreeningIntent } from './intents/candidate-screening.js';
import { careerCoachIntent } from './intents/career-coach.js';
import { careerPathIntent } from './intents/career-path.js';
import { coverLetterIntent } from './intents/cover-letter.js';
import { interviewQuestionsIntent } from './intents/interview-questions.js';
import { jobDescriptionIntent } from './intents/job-description.js';
import { jobMatchIntent } from './intents/job-match.js';
import { mockInterviewIntent } from './intents/mock-interview.js';
import { resumeAnalysisIntent } from './intents/resume-analysis.js';
import { resumeRewriteIntent } from './intents/resume-rewrite.js';
import { skillGapAnalysisIntent } from './intents/skill-gap-analysis.js';
import { HIRING_DOMAIN_KEY } from './shared.js';

export const HIRING_DOMAIN = {
  domain_key: HIRING_DOMAIN_KEY,
  display_name: 'Hiring',
  description:
    'Resume analysis, job matching, candidate screening, interview preparation, career guidance and hiring ' +
    'content, with structured, evidence-based and fair outputs.',
} as const;

export const HIRING_INTENT_KEYS = [
  'resume-analysis',
  'job-match',
  'candidate-screening',
  'skill-gap-analysis',
  'career-path',
  'interview-questions',
  'mock-interview',
  'answer-feedback',
  'resume-rewrite',
  'cover-letter',
  'job-description',
  'career-coach',
] as const;

export const HIRING_INTENTS: IntentDefinition[] = [
  resumeAnalysisIntent,
  jobMatchIntent,
  candidateScreeningIntent,
  skillGapAnalysisIntent,
  careerPathIntent,
  interviewQuestionsIntent,
  mockInterviewIntent,
  answerFeedbackIntent,
  resumeRewriteIntent,
  coverLetterIntent,
  jobDescriptionIntent,
  careerCoachIntent,
];

const BY_KEY = new Map(HIRING_INTENTS.map((intent) => [intent.key, intent]));

/** The built-in hiring intent with this key (`resume-analysis`), or undefined. */
export function getHiringIntent(key: string): IntentDefinition | undefined {
  return BY_KEY.get(key);
}
