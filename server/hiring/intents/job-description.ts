import {
  INCLUSIVE_LANGUAGE_RULES,
  INPUT_FIELDS,
  TEMPLATE_PREAMBLE,
  buildInputSchema,
  buildSystemPrompt,
  defineHiringIntent,
  obj,
  requiredText,
  str,
  strings,
} from '../shared.js';

export const WORK_ARRANGEMENTS = ['onsite', 'hybrid', 'remote'] as const;
export const EMPLOYMENT_TYPES = ['full_time', 'part_time', 'contract', 'temporary', 'internship'] as const;

const systemPrompt = buildSystemPrompt({
  role: 'You are an experienced talent acquisition partner who writes clear, accurate and inclusive job descriptions.',
  task:
    'Write a complete job description for the role in <job_title> from the details provided, in language that ' +
    'invites a broad pool of qualified applicants to apply.',
  method: [
    'Use every detail provided (company, team, location, work arrangement, employment type, seniority, ' +
      'responsibilities, skills, salary range). Where a company-specific fact is missing - benefits, salary, ' +
      'location, company size or mission - do not invent it: use a bracketed placeholder such as [Salary range] ' +
      'and list it in placeholders. Role content that is standard for the title may be written from general ' +
      'knowledge.',
    'summary: two or three sentences on why the role exists and what the person will achieve.',
    'responsibilities: five to eight outcome-focused bullets ("Design and ship...", "Own..."), starting with the ' +
      'most important.',
    'Qualifications: keep must_have_qualifications to the real essentials (at most six) and move everything else ' +
      'to nice_to_have_qualifications, because long must-have lists discourage qualified people from applying. ' +
      'Describe capabilities rather than long year counts, and write "or equivalent experience" unless a degree ' +
      'or licence is legally required.',
    'benefits: only those provided in the input or the knowledge; otherwise a placeholder entry.',
    'equal_opportunity_statement: a short, warm statement that the employer welcomes applicants from all ' +
      'backgrounds and evaluates them on job-relevant criteria, with accommodations available on request.',
    'full_text: the complete posting in markdown - title, summary, about the company, responsibilities, ' +
      'must-have and nice-to-have qualifications, benefits, salary when provided, how to apply, and the equal ' +
      'opportunity statement.',
    'inclusive_language_notes: the inclusive-writing choices you made, including any wording from the input you ' +
      'replaced and why.',
  ],
  extra: [
    INCLUSIVE_LANGUAGE_RULES,
    'Reference knowledge: <knowledge> may contain the company\'s own material (about us, values, benefits, ' +
      'existing postings, style guide). Treat it as authoritative for company facts and follow its style.',
  ],
  insufficient:
    'if only a title is given, write a solid general description for the most common interpretation of that ' +
    'title, use placeholders for company-specific facts, and list them in placeholders.',
});

const promptTemplate = `Write a job description for this role.
${TEMPLATE_PREAMBLE}

<job_title>
{{input.job_title}}
</job_title>

<company_name>
{{input.company_name}}
</company_name>

<about_company>
{{input.about_company}}
</about_company>

<department>
{{input.department}}
</department>

<seniority>
{{input.seniority}}
</seniority>

<location>
{{input.location}}
</location>

<work_arrangement>
{{input.work_arrangement}}
</work_arrangement>

<employment_type>
{{input.employment_type}}
</employment_type>

<salary_range>
{{input.salary_range}}
</salary_range>

<responsibilities>
{{input.responsibilities}}
</responsibilities>

<skills>
{{input.skills}}
</skills>

<benefits>
{{input.benefits}}
</benefits>

<knowledge>
{{context}}
</knowledge>`;

const text = (maxLength: number, description: string) => ({ type: 'string', maxLength, description });

const inputSchema = buildInputSchema({
  needs: 'job_title',
  properties: {
    job_title: requiredText(INPUT_FIELDS.job_title),
    company_name: text(200, 'The hiring company.'),
    about_company: text(5_000, 'What the company does, its mission and culture, in the company\'s own words.'),
    department: text(200, 'Team or department the role belongs to.'),
    seniority: text(100, 'Level of the role, e.g. "junior", "senior", "lead".'),
    location: text(200, 'Where the role is based.'),
    work_arrangement: { type: 'string', enum: [...WORK_ARRANGEMENTS], description: 'Where the work happens.' },
    employment_type: { type: 'string', enum: [...EMPLOYMENT_TYPES], description: 'Kind of contract.' },
    salary_range: text(200, 'Pay range to publish, e.g. "EUR 60,000-75,000 per year".'),
    responsibilities: text(10_000, 'What the person will do, in the hiring manager\'s words.'),
    skills: INPUT_FIELDS.skills,
    benefits: text(5_000, 'Benefits to mention.'),
  },
  required: ['job_title'],
});

const outputSchema = obj({
  title: str('The job title as it should be published.'),
  summary: str('Two or three sentences on why the role exists and what the person will achieve.'),
  responsibilities: strings('Outcome-focused responsibilities, most important first.', { minItems: 1, maxItems: 10 }),
  must_have_qualifications: strings('Essential qualifications only.', { maxItems: 8 }),
  nice_to_have_qualifications: strings('Helpful but optional qualifications.'),
  benefits: strings('Benefits given in the input or knowledge, or placeholder entries.'),
  equal_opportunity_statement: str('Short statement welcoming applicants from all backgrounds.'),
  full_text: str('The complete job posting in markdown.'),
  inclusive_language_notes: strings('Inclusive-writing choices made and wording replaced.'),
  placeholders: strings('Bracketed placeholders in the posting for facts that were not provided.'),
});

export const jobDescriptionIntent = defineHiringIntent({
  key: 'job-description',
  displayName: 'Job description',
  description: 'Writes a complete, inclusive job description from a job title and whatever role details are provided.',
  systemPrompt,
  promptTemplate,
  inputSchema,
  outputSchema,
  temperature: 0.6,
  cache: null,
});
