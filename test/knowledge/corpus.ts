// A small HR handbook for the retrieval quality check: 32 documents (one chunk per paragraph) with
// overlapping vocabulary, and 60 questions, each with the document that answers it. Questions are
// paraphrased (no copied phrases); some carry typos, some need a synonym the document does not use.

export interface CorpusDocument {
  key: string;
  name: string;
  category: string;
  paragraphs: string[];
}

export interface CorpusQuestion {
  question: string;
  expected: string;
  kind: 'paraphrase' | 'typo' | 'synonym';
}

export const CORPUS: CorpusDocument[] = [
  {
    key: 'annual-leave',
    name: 'Annual leave policy',
    category: 'leave',
    paragraphs: [
      'Full-time employees accrue 25 days of annual leave per calendar year, earned monthly from the start date. Part-time staff accrue leave pro rata to their contracted hours.',
      'Up to five unused days may be carried over into the next year and must be used before the end of March. Remaining days expire without payment.',
      'Leave requests go through the HR portal and need manager approval at least two weeks in advance for absences longer than three days.',
    ],
  },
  {
    key: 'sick-leave',
    name: 'Sick leave and illness reporting',
    category: 'leave',
    paragraphs: [
      'If you are ill, notify your manager before 10:00 on the first day of absence. Sick days are paid in full for up to 30 days per year.',
      'A doctor\'s note is required when an illness lasts more than three consecutive working days. Upload the certificate in the HR portal.',
      'Long-term illness beyond 30 days is covered by the disability insurance described in the benefits guide.',
    ],
  },
  {
    key: 'parental-leave',
    name: 'Parental leave',
    category: 'leave',
    paragraphs: [
      'Birth mothers receive 20 weeks of fully paid maternity leave. Other parents, including adoptive parents, receive 12 weeks of fully paid paternity or partner leave.',
      'Parental leave can be taken in up to three blocks within 18 months of the birth or adoption. Tell HR at least eight weeks before the first block starts.',
      'On return, employees may work reduced hours for a phase-in period of four weeks at full pay.',
    ],
  },
  {
    key: 'bereavement',
    name: 'Bereavement leave',
    category: 'leave',
    paragraphs: [
      'When a close family member dies, employees are granted five days of paid bereavement leave. For extended family the allowance is two days.',
      'Bereavement leave does not need to be requested in advance; inform your manager as soon as you can and HR will record the absence.',
    ],
  },
  {
    key: 'sabbatical',
    name: 'Sabbatical programme',
    category: 'leave',
    paragraphs: [
      'After five years of continuous service, employees may take an unpaid sabbatical of up to three months. Benefits such as health cover continue during the break.',
      'Apply to your director six months before the intended start. Only one sabbatical is granted per five-year period.',
    ],
  },
  {
    key: 'public-holidays',
    name: 'Public holidays and office closures',
    category: 'leave',
    paragraphs: [
      'The company observes the national public holidays of the country where you are employed. The list for the year is published in January.',
      'Offices close between Christmas and New Year; those days are granted as extra paid days off and are not taken from annual leave.',
    ],
  },
  {
    key: 'interview-process',
    name: 'Interview process',
    category: 'hiring',
    paragraphs: [
      'Candidates go through four stages: a 30-minute recruiter screen, a technical interview, a take-home assignment and a final panel with the hiring manager.',
      'Each interviewer submits written feedback within 24 hours using the scorecard. The hiring committee decides in a debrief meeting after the final panel.',
      'We aim to give every candidate a decision within ten working days of the final panel.',
    ],
  },
  {
    key: 'interviewer-training',
    name: 'Interviewer training and scorecards',
    category: 'hiring',
    paragraphs: [
      'Before joining a panel, every interviewer completes a two-hour training on structured interviewing and unconscious bias.',
      'Scorecards rate competencies on a four-point scale and must include evidence from the conversation, not impressions. Do not discuss a candidate with other panelists before submitting.',
    ],
  },
  {
    key: 'job-offers',
    name: 'Job offers and approvals',
    category: 'hiring',
    paragraphs: [
      'Offers are prepared by the recruiter once the hiring committee approves. Any offer above the midpoint of the salary band needs sign-off from the finance partner.',
      'Verbal offers are followed by a written contract within two working days. Candidates have one week to accept.',
    ],
  },
  {
    key: 'referrals',
    name: 'Employee referral programme',
    category: 'hiring',
    paragraphs: [
      'Employees who refer a candidate who is hired receive a referral bonus of 2,000 euros, paid after the new hire completes three months.',
      'Submit referrals through the applicant tracking system so the recruiter can credit you. Referrals of former colleagues are welcome; referrals of relatives follow the conflict of interest rules.',
    ],
  },
  {
    key: 'background-checks',
    name: 'Background checks',
    category: 'hiring',
    paragraphs: [
      'Final candidates consent to a background screening that verifies identity, right to work, education and previous employment.',
      'Criminal record checks are only run for roles handling payments or sensitive personal data, and only where the law allows it.',
    ],
  },
  {
    key: 'salary-bands',
    name: 'Salary bands',
    category: 'compensation',
    paragraphs: [
      'Every role maps to a level from L1 to L7, and each level has a salary band with a minimum, midpoint and maximum, reviewed every year against market data.',
      'New hires are normally placed between the minimum and the midpoint of their band. Bands are published internally so that pay decisions are transparent.',
    ],
  },
  {
    key: 'pay-review',
    name: 'Annual pay review',
    category: 'compensation',
    paragraphs: [
      'Pay is reviewed once a year in April. Increases reflect the performance rating, position in the band and the market movement of the role.',
      'Managers propose increases within a budget set by finance; HR calibrates proposals across teams before they are communicated in May.',
    ],
  },
  {
    key: 'bonus',
    name: 'Bonus scheme',
    category: 'compensation',
    paragraphs: [
      'Eligible employees can earn an annual bonus of up to 10 percent of base salary, depending on company results and individual performance.',
      'Bonuses are paid with the March payroll. People who leave before the payment date are not eligible, except in case of retirement.',
    ],
  },
  {
    key: 'payroll',
    name: 'Payroll and payslips',
    category: 'compensation',
    paragraphs: [
      'Salaries are paid on the 25th of each month, or the previous working day when the 25th falls on a weekend or holiday.',
      'Payslips are available in the payroll portal. Report any error in your pay to payroll within 30 days so it can be corrected in the next run.',
    ],
  },
  {
    key: 'equity',
    name: 'Stock options',
    category: 'compensation',
    paragraphs: [
      'Permanent employees receive stock options when they join. Options vest over four years with a one-year cliff, then monthly.',
      'Vested options can be exercised up to ten years after the grant. If you leave, you have 90 days to exercise vested options.',
    ],
  },
  {
    key: 'remote-work',
    name: 'Remote work policy',
    category: 'workplace',
    paragraphs: [
      'Employees may work from home up to three days a week, agreed with their manager. Some roles that need on-site equipment are excluded.',
      'Core collaboration hours are 10:00 to 15:00 local time; outside them, schedules are flexible.',
      'Working from another country for more than 20 days a year needs approval from HR because of tax and insurance rules.',
    ],
  },
  {
    key: 'home-office',
    name: 'Home office equipment allowance',
    category: 'workplace',
    paragraphs: [
      'Staff who work remotely at least two days a week receive a one-off allowance of 500 euros for a desk, chair or monitor.',
      'Keep the receipts and claim the allowance through the expense tool within your first six months.',
    ],
  },
  {
    key: 'office-access',
    name: 'Office access and visitors',
    category: 'workplace',
    paragraphs: [
      'Your badge opens the office from 7:00 to 22:00 on weekdays. Weekend access must be requested from facilities.',
      'Visitors sign in at reception and must be accompanied by their host at all times. Lost badges are reported to security immediately.',
    ],
  },
  {
    key: 'working-hours',
    name: 'Working hours and overtime',
    category: 'workplace',
    paragraphs: [
      'The standard working week is 40 hours. Hourly staff are paid overtime at 150 percent for hours worked beyond that, when approved in advance by the manager.',
      'Salaried employees do not receive overtime pay but may take time off in lieu after exceptional weekend work.',
    ],
  },
  {
    key: 'health-insurance',
    name: 'Health insurance',
    category: 'benefits',
    paragraphs: [
      'The company pays 100 percent of the premium for private medical insurance for employees and 50 percent for their spouse and children.',
      'Cover includes hospital stays, specialists, dental check-ups and glasses. Enrolment happens in the first week; dependants can be added within 30 days of a life event.',
    ],
  },
  {
    key: 'pension',
    name: 'Pension plan',
    category: 'benefits',
    paragraphs: [
      'The company contributes 5 percent of base salary to the retirement savings plan when the employee contributes at least 3 percent.',
      'Contributions start after the probation period and can be changed twice a year in the benefits portal.',
    ],
  },
  {
    key: 'wellbeing',
    name: 'Wellbeing and mental health support',
    category: 'benefits',
    paragraphs: [
      'Every employee has free, confidential access to six counselling sessions per year through the employee assistance programme.',
      'A monthly wellness stipend of 50 euros can be spent on gym memberships, yoga classes or meditation apps.',
    ],
  },
  {
    key: 'learning',
    name: 'Learning and development budget',
    category: 'benefits',
    paragraphs: [
      'Each employee has a yearly learning budget of 1,500 euros for courses, conferences, certifications and books.',
      'Agree the training with your manager first. Courses costing more than 3,000 euros come with a repayment clause if you leave within a year.',
    ],
  },
  {
    key: 'commuting',
    name: 'Commuting and travel benefits',
    category: 'benefits',
    paragraphs: [
      'Public transport season tickets are reimbursed in full. Employees who cycle to work can lease a bike through the company scheme.',
      'Parking at the office is limited and allocated first to people with disabilities and to car-sharing colleagues.',
    ],
  },
  {
    key: 'onboarding',
    name: 'Onboarding first week',
    category: 'onboarding',
    paragraphs: [
      'On the first day, new hires meet their buddy, collect their laptop from IT and attend the welcome session with HR at 10:00.',
      'During the first week you complete the mandatory security and privacy training and set up your accounts. Your manager shares a 30-60-90 day plan.',
    ],
  },
  {
    key: 'probation',
    name: 'Probation period',
    category: 'onboarding',
    paragraphs: [
      'New employees serve a probation period of six months. During probation either side can end the contract with two weeks of notice.',
      'A review meeting with your manager takes place at three months and again before probation ends, when your employment is confirmed.',
    ],
  },
  {
    key: 'it-equipment',
    name: 'Laptops and IT equipment',
    category: 'onboarding',
    paragraphs: [
      'Every employee receives a laptop, replaced every three years. Lost or stolen devices must be reported to the IT service desk within 24 hours.',
      'Only company-managed devices may access internal systems. Install software from the self-service catalogue; other software needs IT approval.',
    ],
  },
  {
    key: 'code-of-conduct',
    name: 'Code of conduct',
    category: 'conduct',
    paragraphs: [
      'We expect everyone to treat colleagues, candidates and customers with respect. Harassment, discrimination and bullying are not tolerated.',
      'Concerns can be raised with your manager, HR or anonymously through the whistleblowing hotline. Retaliation against anyone who speaks up is prohibited.',
    ],
  },
  {
    key: 'conflicts-of-interest',
    name: 'Conflicts of interest and gifts',
    category: 'conduct',
    paragraphs: [
      'Declare any outside job, investment or family relationship that could influence your decisions at work. Managers may not supervise close relatives.',
      'Gifts from suppliers above 50 euros in value must be declared and, where possible, refused politely.',
    ],
  },
  {
    key: 'data-protection',
    name: 'Data protection and confidentiality',
    category: 'conduct',
    paragraphs: [
      'Personal data of employees and candidates is processed only for legitimate business purposes and kept no longer than necessary.',
      'Candidate files are deleted twelve months after the recruitment closes unless the candidate agrees to a longer retention. Report any data breach to the privacy team at once.',
    ],
  },
  {
    key: 'resignation',
    name: 'Resignation and notice periods',
    category: 'offboarding',
    paragraphs: [
      'After probation, the notice period is one month for levels L1 to L3 and three months for L4 and above. Resignations are submitted in writing to your manager.',
      'Before your last day, return your laptop and badge and complete an exit interview with HR. Unused annual leave is paid out with the final salary.',
    ],
  },
  {
    key: 'performance-reviews',
    name: 'Performance reviews',
    category: 'performance',
    paragraphs: [
      'Performance is reviewed twice a year, in June and December, combining a self-assessment, peer feedback and the manager\'s evaluation.',
      'Ratings range from "below expectations" to "exceptional". Employees rated below expectations agree an improvement plan with clear goals for the next three months.',
    ],
  },
  {
    key: 'promotions',
    name: 'Promotions and career levels',
    category: 'performance',
    paragraphs: [
      'Promotions to the next level are decided twice a year by a calibration committee, based on sustained performance at the higher level for at least six months.',
      'Your manager writes the promotion case with examples of impact; you can nominate yourself by sharing evidence with your manager.',
    ],
  },
];

export const QUESTIONS: CorpusQuestion[] = [
  // paraphrases
  { question: 'How many vacation days do I earn each year?', expected: 'annual-leave', kind: 'synonym' },
  { question: 'Can I keep unused days off for next year?', expected: 'annual-leave', kind: 'paraphrase' },
  { question: 'Who must I tell when I am sick and cannot come to work?', expected: 'sick-leave', kind: 'paraphrase' },
  { question: 'When do I need a medical certificate for my absence?', expected: 'sick-leave', kind: 'synonym' },
  { question: 'How long is paid maternity leave for a mother after giving birth?', expected: 'parental-leave', kind: 'paraphrase' },
  { question: 'Do adoptive parents get paid leave too?', expected: 'parental-leave', kind: 'paraphrase' },
  { question: 'How much time off do I get if a relative passes away?', expected: 'bereavement', kind: 'synonym' },
  { question: 'Can I take a long unpaid break after several years at the company?', expected: 'sabbatical', kind: 'paraphrase' },
  { question: 'Is the office open between Christmas and New Year?', expected: 'public-holidays', kind: 'paraphrase' },
  { question: 'Which national holidays does the company observe?', expected: 'public-holidays', kind: 'paraphrase' },
  { question: 'What are the stages a candidate goes through before being hired?', expected: 'interview-process', kind: 'paraphrase' },
  { question: 'How quickly will an applicant hear back after the final panel?', expected: 'interview-process', kind: 'paraphrase' },
  { question: 'What training do I need before I can interview people?', expected: 'interviewer-training', kind: 'paraphrase' },
  { question: 'How should interviewers fill in the scorecard?', expected: 'interviewer-training', kind: 'paraphrase' },
  { question: 'Who has to approve an offer above the band midpoint?', expected: 'job-offers', kind: 'paraphrase' },
  { question: 'How long does a candidate have to accept an offer?', expected: 'job-offers', kind: 'paraphrase' },
  { question: 'What bonus do I get for recommending a friend who gets hired?', expected: 'referrals', kind: 'synonym' },
  { question: 'Do we verify the employment history of finalists?', expected: 'background-checks', kind: 'paraphrase' },
  { question: 'When is a criminal record check done?', expected: 'background-checks', kind: 'paraphrase' },
  { question: 'What are the pay ranges for each level?', expected: 'salary-bands', kind: 'synonym' },
  { question: 'Where in the band are new hires placed?', expected: 'salary-bands', kind: 'paraphrase' },
  { question: 'When does the yearly salary increase happen?', expected: 'pay-review', kind: 'paraphrase' },
  { question: 'How big can my yearly bonus be?', expected: 'bonus', kind: 'paraphrase' },
  { question: 'On which day of the month is salary paid?', expected: 'payroll', kind: 'paraphrase' },
  { question: 'Where can I download my payslip?', expected: 'payroll', kind: 'paraphrase' },
  { question: 'How do stock options vest?', expected: 'equity', kind: 'paraphrase' },
  { question: 'How long can I exercise options after leaving?', expected: 'equity', kind: 'paraphrase' },
  { question: 'How many days per week can I work from home?', expected: 'remote-work', kind: 'paraphrase' },
  { question: 'Can I work abroad for a few weeks?', expected: 'remote-work', kind: 'synonym' },
  { question: 'Is there money for a desk and chair for my home setup?', expected: 'home-office', kind: 'paraphrase' },
  { question: 'Can I get into the office on a Saturday?', expected: 'office-access', kind: 'synonym' },
  { question: 'Are extra hours paid for hourly staff?', expected: 'working-hours', kind: 'paraphrase' },
  { question: 'Does the company cover medical insurance for my children?', expected: 'health-insurance', kind: 'paraphrase' },
  { question: 'How much does the employer put into my retirement savings?', expected: 'pension', kind: 'paraphrase' },
  { question: 'Is there free counselling for mental health?', expected: 'wellbeing', kind: 'paraphrase' },
  { question: 'Does the company pay for my gym membership?', expected: 'wellbeing', kind: 'paraphrase' },
  { question: 'How much can I spend on conferences and courses?', expected: 'learning', kind: 'paraphrase' },
  { question: 'Will my train pass be reimbursed?', expected: 'commuting', kind: 'synonym' },
  { question: 'What happens on my first day?', expected: 'onboarding', kind: 'paraphrase' },
  { question: 'How long is the probation period?', expected: 'probation', kind: 'paraphrase' },
  { question: 'What do I do if my laptop is stolen?', expected: 'it-equipment', kind: 'paraphrase' },
  { question: 'How do I report harassment anonymously?', expected: 'code-of-conduct', kind: 'paraphrase' },
  { question: 'Can I accept a present from a supplier?', expected: 'conflicts-of-interest', kind: 'synonym' },
  { question: 'How long do we keep applicant data after recruiting ends?', expected: 'data-protection', kind: 'synonym' },
  { question: 'What is the notice period when I quit?', expected: 'resignation', kind: 'synonym' },
  { question: 'How often are performance evaluations held?', expected: 'performance-reviews', kind: 'paraphrase' },
  { question: 'How do I get promoted to the next level?', expected: 'promotions', kind: 'paraphrase' },
  { question: 'Is unused leave paid when I leave the company?', expected: 'resignation', kind: 'paraphrase' },
  { question: 'Can a manager supervise a family member?', expected: 'conflicts-of-interest', kind: 'synonym' },
  { question: 'What happens if I am rated below expectations?', expected: 'performance-reviews', kind: 'paraphrase' },
  // typos
  { question: 'how many anual leeve days do I get', expected: 'annual-leave', kind: 'typo' },
  { question: 'paternaty leave for partners', expected: 'parental-leave', kind: 'typo' },
  { question: 'interveiw stages for candidates', expected: 'interview-process', kind: 'typo' },
  { question: 'refferal bonus amount', expected: 'referrals', kind: 'typo' },
  { question: 'salery band midpoint', expected: 'salary-bands', kind: 'typo' },
  { question: 'stok option vesting cliff', expected: 'equity', kind: 'typo' },
  { question: 'remot work from hom', expected: 'remote-work', kind: 'typo' },
  { question: 'pension contributon percentage', expected: 'pension', kind: 'typo' },
  { question: 'probaton period notice', expected: 'probation', kind: 'typo' },
  { question: 'whistleblowing hotlne for harrasment', expected: 'code-of-conduct', kind: 'typo' },
];
