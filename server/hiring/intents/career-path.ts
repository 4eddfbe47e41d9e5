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
  nonBlankBranch,
  nullableInt,
  obj,
  str,
  strings,
} from '../shared.js';

export const PATH_TYPES = ['progression', 'lateral', 'career_change'] as const;

const systemPrompt = buildSystemPrompt({
  role: 'You are a pragmatic career strategist who helps professionals plan realistic next moves.',
  task:
    'From the person\'s current position, propose realistic career paths, with the intermediate steps, the ' +
    'skills to build and the typical time each takes, and recommend one.',
  method: [
    'Establish the current position from <current_role>, <resume>, <years_experience> and <skills>: function, ' +
      'level, domain and strongest skills.',
    'Propose two to four distinct paths: at least one progression within the current track and, where the ' +
      'profile supports it, a lateral move or a career change that reuses transferable skills. When <target_role> ' +
      'is given, one path must lead to it, and assess its realism honestly even when it is a long way off. When ' +
      '<interests> is given, favour paths that fit them.',
    'For each path give the destination role, the path type, a fit_score (0-100) based on how much of the ' +
      'required profile the person already shows, the steps (intermediate roles or milestones with typical ' +
      'duration in months, null when it varies too much to say), the skills to build, the strengths that carry ' +
      'over, and the main risks or trade-offs.',
    'Durations are typical ranges in the field, not promises. Do not quote salaries, name employers or cite ' +
      'market statistics unless they appear in the input.',
    'recommended_path is the title of the path that best balances fit, the person\'s stated goal and interests, ' +
      'and realism; it must be exactly one of the path titles.',
    'immediate_next_steps: three to five concrete actions for the next 90 days.',
  ],
  insufficient:
    'if the current role and resume give too little to go on, propose broad paths with lower fit scores and ' +
    'list in limitations what would make the advice specific.',
});

const promptTemplate = `Suggest career paths for this person.
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

<interests>
{{input.interests}}
</interests>

<resume>
{{input.resume_text}}
</resume>`;

const inputSchema = buildInputSchema({
  needs: 'either current_role or resume_text',
  properties: {
    current_role: INPUT_FIELDS.current_role,
    resume_text: INPUT_FIELDS.resume_text,
    target_role: INPUT_FIELDS.target_role,
    years_experience: INPUT_FIELDS.years_experience,
    skills: INPUT_FIELDS.skills,
    interests: {
      type: 'string',
      maxLength: 2_000,
      description: 'What the person enjoys or wants more of in their work.',
    },
  },
  required: [],
  anyOf: [
    nonBlankBranch('current_role'),
    nonBlankBranch('resume_text'),
  ],
});

const outputSchema = obj({
  current_position: str('Short summary of where the person stands today: function, level, domain, key strengths.'),
  paths: arrayOf(
    obj({
      title: str('The destination role of this path.'),
      path_type: enumOf(PATH_TYPES, 'Kind of move.'),
      fit_score: int('How much of the destination profile the person already shows (0-100).', 0, 100),
      rationale: str('Why this path suits the person, based on their profile.'),
      steps: arrayOf(
        obj({
          milestone: str('An intermediate role or milestone.'),
          typical_duration_months: nullableInt('Typical months to reach it; null when it varies too much.', 1, 240),
        }),
        'Ordered steps from today to the destination role.',
        { minItems: 1 },
      ),
      skills_to_build: strings('Skills the path requires that the person does not yet show.'),
      transferable_strengths: strings('What the person already has that carries over.'),
      risks: strings('Main risks or trade-offs of this path.'),
    }),
    'Two to four distinct paths.',
    { minItems: 1, maxItems: 4 },
  ),
  recommended_path: str('Title of the recommended path; one of paths[].title.'),
  immediate_next_steps: strings('Concrete actions for the next 90 days.', { maxItems: 5 }),
  limitations: LIMITATIONS,
});

export const careerPathIntent = defineHiringIntent({
  key: 'career-path',
  displayName: 'Career path',
  description: 'Proposes realistic career paths from the current role, with steps, skills to build and a recommendation.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.4,
  cache: ANALYTICAL_CACHE,
});
