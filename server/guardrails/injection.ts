// Prompt-injection and jailbreak detection: weighted rules over a normalised copy of the text
// (NFKC, no zero-width characters, lower case, collapsed whitespace), plus a look inside
// encoded payloads (base64, hex, ROT13, reversed text). A text is an injection when the weights of
// the distinct rules that fire add up to at least 1.
//
// Hard negatives drive the rule shapes: "I ignore distractions" (no instruction noun), "you will
// act as a team lead" (no jailbreak persona), "enable developer mode on your Android phone" (a
// device context), and people discussing attacks ("payloads such as 'ignore previous
// instructions'"), where a quoted or reported phrase counts for a quarter.
import { DECODE_AND_FOLLOW, decodeAndFollowMatches } from './decode-and-follow.js';
import { FAKE_TURNS, fakeTurnsMatches } from './fake-turns.js';
import { HIDDEN_COMMENT, hiddenCommentMatches } from './hidden-comment.js';
import { normalizeWithMap } from './normalize.js';
import { candidateOffsets, compileRuleSet, confirmedOffsets, ruleMatches, type RuleSet } from './rule-index.js';

export type InjectionCategory =
  | 'instruction_override'
  | 'role_hijack'
  | 'system_prompt_exfiltration'
  | 'delimiter_injection'
  | 'encoded_payload'
  | 'developer_mode'
  | 'ai_directed_instruction';

interface Rule {
  id: string;
  category: InjectionCategory;
  weight: number;
  re: RegExp;
  /** Run on the case-preserving text (e.g. `DAN`, which is also a first name). */
  caseSensitive?: boolean;
  /** A match is ignored when this matches the text around it (±100 characters). */
  unless?: RegExp;
  /** Finds exactly the matches of `re`, in linear time where `re` would backtrack far. */
  matches?: (text: string) => Iterable<RegExpExecArray>;
}

export interface InjectionHit {
  rule: string;
  category: InjectionCategory;
  weight: number;
}

export interface InjectionResult {
  detected: boolean;
  score: number;
  categories: InjectionCategory[];
  rules: string[];
}

const w = String.raw;

const OVERRIDE_VERB = w`(?:ignore|ignoring|disregard|disregarding|forget|forgetting|overlook|overlooking|dismiss|bypass|neglect|abandon|pay no attention to|never mind|nevermind|scrap|throw away|toss|ditch|put aside|discard|set aside|throw out|do not follow|don't follow|dont follow|stop following|no longer follow|stop obeying|do not obey|don't obey)`;
const QUALIFIER = w`(?:above|previous|prior|preceding|earlier|initial|original|system|safety|developer|hidden|programmed|all|any|every)`;
/** Qualifiers that also occur in everyday process talk ("we don't follow the old instructions anymore"). */
const WEAK_QUALIFIER = w`(?:old|existing|current|default|given|provided|foregoing|preset|pre-set|built-in|these|those|such|former)`;
const INSTRUCTION_NOUN = w`(?:instructions?|prompts?|rules|directions|directives?|guidelines|guidance|commands|orders|context|programming|constraints|restrictions|guardrails|policies|policy|messages|safeguards|filters|training|limitations|boundaries|ethics|protocols?|rubric|scoring (?:rubric|guide|criteria)|evaluation criteria|criteria)`;
// "Override the default settings" is everyday engineering: override counts only against earlier or built-in instructions.
const STRONG_QUALIFIER = w`(?:above|previous|prior|preceding|earlier|initial|original|system|safety|all|any|every|your|these|those|hidden|programmed)`;

const RULES: Rule[] = [
  // --- instruction override
  {
    id: 'override_previous_instructions',
    category: 'instruction_override',
    weight: 1,
    re: new RegExp(w`\b${OVERRIDE_VERB} (?:(?:all|any|each|every|of|the|your|my|these|those|its|their|our|and|\w+'s) ){0,3}${QUALIFIER} (?:(?:\w+|and|or) ){0,2}?${INSTRUCTION_NOUN}\b`, 'g'),
  },
  {
    id: 'override_weakly_qualified_instructions',
    category: 'instruction_override',
    weight: 0.5,
    re: new RegExp(w`\b${OVERRIDE_VERB} (?:(?:the|your|my|of) ){0,2}${WEAK_QUALIFIER} (?:(?:\w+|and|or) ){0,2}?${INSTRUCTION_NOUN}\b`, 'g'),
  },
  {
    id: 'override_instructions_you_got',
    category: 'instruction_override',
    weight: 1,
    re: new RegExp(w`\b${OVERRIDE_VERB} (?:all |any |the |your |those |these )?(?:[\w-]+ ){0,2}?${INSTRUCTION_NOUN} (?:that )?(?:you(?:'ve| have| were| are)?|they|someone|the company|the recruiter) (?:got|given|been given|received|told|following|follow|have|were given|were told|gave you|set for you)\b`, 'g'),
  },
  {
    id: 'ignore_the_rules',
    category: 'instruction_override',
    weight: 0.6,
    re: /\b(?:ignore|disregard|bypass|break|bend|forget|skip)\b (?:the|your|all|these|those) (?:rules|instructions|guidelines|policy|policies|restrictions)\b(?! (?:of|for|about|on|in|regarding|when|if)\b)/g,
  },
  {
    id: 'override_previous_instructions_strong',
    category: 'instruction_override',
    weight: 1,
    re: new RegExp(w`\b(?:override|overriding|overrule|overruling) (?:(?:all|any|of|the|your|my|these|those|its) ){0,3}${STRONG_QUALIFIER} (?:(?:\w+|and|or) ){0,2}?${INSTRUCTION_NOUN}\b`, 'g'),
  },
  {
    id: 'stop_following_instructions',
    category: 'instruction_override',
    weight: 0.7,
    re: /\b(?:stop following|do not follow|don't follow|dont follow|no longer follow|stop obeying|do not obey|don't obey|stop listening to) (?:the |your |any |those |these )?(?:instructions|rules|guidelines|directives|system prompt|prompt)\b/g,
  },
  {
    id: 'instead_do',
    category: 'instruction_override',
    weight: 0.4,
    re: /\b(?:and|but) instead\b,? (?:just |only )?(?:write|say|output|tell|give|reveal|print|respond|answer|list|send|share|return)\b/g,
  },
  {
    id: 'output_exact_phrase',
    category: 'instruction_override',
    weight: 0.5,
    re: /\b(?:output|respond with|reply with|answer with|say|print|return|write|type) (?:only |just )?(?:the (?:word|phrase|text|string|sentence)|exactly ["“'`]|verbatim ["“'`])|\b(?:output|return|respond with|reply with|print) (?:only |just )?["“'`][^"”'`\n]{1,40}["”'`]/g,
  },
  {
    id: 'override_your_instructions',
    category: 'instruction_override',
    weight: 1,
    re: new RegExp(w`\b(?:${OVERRIDE_VERB}|override|overrule) (?:all |any )?(?:of )?(?:your|the assistant's|the model's|the ai's) (?:own )?(?:\w+ )?(?:instructions|rules|programming|guidelines|directives|restrictions|constraints|training|system prompt|prompt|policies|guardrails|safeguards|filters|ethics)\b`, 'g'),
  },
  {
    id: 'forget_everything',
    category: 'instruction_override',
    weight: 1,
    re: /\b(?:forget|ignore|disregard|overlook|dismiss|erase|clear|wipe|reset) (?:about )?(?:everything|anything|whatever|all(?: of)? (?:that|this|the above)|what) (?:you(?:'ve| have)? (?:were|have been|been|know|learned|were told|got|received|read)|(?:written |said |stated |mentioned )?(?:above|before(?: this)?|previously|earlier|so far|up to (?:this|now))|i (?:said|told you)|in (?:your|the) (?:prompt|instructions|context))/g,
  },
  {
    id: 'ignore_above',
    category: 'instruction_override',
    weight: 1,
    re: /\b(?:ignore|disregard|forget)\b (?:everything |all |anything |all text |the text |what(?:'s| is| was) )?(?:above|before this|prior to this|that came before|written above|preceding this)\b/g,
  },
  {
    id: 'new_instructions',
    category: 'instruction_override',
    weight: 0.6,
    re: /\b(?:new|updated|real|actual|true|revised|secret|hidden|override|overriding|priority|urgent) (?:system )?(?:instructions?|prompt|directives?|task|orders|rules?|polic(?:y|ies))\s*[:\-]/g,
  },
  {
    id: 'from_now_on',
    category: 'instruction_override',
    weight: 0.5,
    re: /\b(?:from now on|from this point (?:on|forward)|for the rest of this conversation|henceforth),? you (?:will|must|are|shall|should|can|have|no longer|only|always|never|respond|answer|reply|act|speak|talk|behave|say)\b/g,
    unless: /\breport(?:s|ing)? to\b|\bteam\b|\bmanager\b|\brole\b|\bposition\b|\bemployee\b/,
  },
  {
    id: 'ignore_task',
    category: 'instruction_override',
    weight: 1,
    re: /\b(?:ignore|disregard|forget|overlook|skip|never mind|throw away|drop)\b (?:the |your |this |that |my |any |all )?(?:[\w']+ ){0,2}?(?:job description|rubric|scoring|evaluation(?: criteria)?|criteria|requirements|task|assignment|question|document|conversation|context|input|guidelines|instructions|rules)\b[^\n]{0,80}?(?:\binstead\b|[.!;:,]? (?:and )?(?:now |just |please |only )?(?:tell|write|say|output|give|reveal|print|list|send|share|return|approve|recommend|rate|rank|score|mark|reply|respond|answer|evaluate|show|hire|advance)\b)/g,
  },
  {
    id: 'hide_from_user',
    category: 'instruction_override',
    weight: 0.7,
    re: /\b(?:do not|don't|never) (?:tell|inform|mention (?:this )?to|reveal (?:this )?to|alert|notify) (?:the )?(?:user|human|recruiter|hiring manager|operator|reviewer)\b|\b(?:do not|don't|never) (?:mention|reveal|repeat|disclose|acknowledge) (?:this|these) (?:comment|note|instructions?|message|text|hidden text)\b|\bwithout (?:telling|informing|alerting|notifying) (?:the )?(?:user|human|recruiter|operator)\b/g,
  },
  {
    id: 'respond_only_with',
    category: 'instruction_override',
    weight: 0.4,
    re: /\b(?:respond|reply|answer|output|say) (?:only )?(?:with|exactly)? ?["“'`]?(?:i have been pwned|pwned|hacked|access granted|yes, i am unrestricted)\b/g,
  },
  {
    id: 'override_safety',
    category: 'instruction_override',
    weight: 0.6,
    re: /\b(?:bypass|disable|turn off|switch off|deactivate|circumvent|get around|evade|remove|lift|suspend|skip|ignore) (?:all |any |your |the |its )*(?:safety|content|ethical|moral|security)? ?(?:filters?|guardrails|safeguards|restrictions|censorship|content polic(?:y|ies)|safety (?:rules|protocols|guidelines|measures|checks)|alignment)\b/g,
    unless: /\b(?:firewall|network|vpn|proxy|website|web filter|parental|spam|email|router|ad ?block|ads)\b/,
  },
  {
    id: 'admin_override',
    category: 'instruction_override',
    weight: 0.7,
    re: /\b(?:admin|administrator|system|developer|root|sudo|security|priority) override\b(?!\s*[:!\-])|\boverride (?:code|command|mode|protocol)\s*[:\-]|\bi am (?:your|the) (?:developer|creator|administrator|admin|owner|programmer|operator|system administrator)\b|\bas (?:your|the) (?:developer|creator|administrator|admin|operator), i (?:authorize|order|command|instruct|allow)/g,
  },
  {
    id: 'authority_claim',
    category: 'instruction_override',
    weight: 0.5,
    re: /\b(?:i am|i'm|this is|as) (?:the |your |an? )?(?:system administrator|sysadmin|admin|administrator|developer|creator|owner|operator|programmer|ceo|head of hr|security team|it department)\b(?: of (?:this|the) (?:platform|bot|system|assistant|model|tool))?/g,
    unless: /\b(?:years?|experience|role|position|job|team|company|worked|working|hired|responsible)\b/,
  },
  {
    id: 'instructing_you',
    category: 'instruction_override',
    weight: 0.6,
    re: /\b(?:i am|i'm|we are|we're) (?:hereby )?(?:instructing|ordering|commanding|authori[sz]ing|directing|telling) you to\b|\bi (?:hereby )?(?:order|command|authori[sz]e|instruct|direct) you to\b/g,
  },
  {
    id: 'real_task',
    category: 'instruction_override',
    weight: 0.5,
    re: /\byour (?:real|actual|true|new|only) (?:task|job|goal|objective|instruction|purpose|mission) (?:is|will be|now is|from now on is)\b/g,
  },
  {
    id: 'previous_was_test',
    category: 'instruction_override',
    weight: 0.6,
    re: /\b(?:everything|all|anything|the text|the messages?) (?:before|above|prior to) (?:this|my) (?:message|line|point|sentence)? ?(?:was|were|is) (?:just )?(?:a test|fake|a joke|irrelevant|a mistake|a distraction|not real|void)\b/g,
  },
  {
    id: 'other_candidates_data',
    category: 'instruction_override',
    weight: 0.5,
    re: /\b(?:show|tell|give|send|share|list|reveal|export|dump|leak|print)\b (?:me |us )?(?:all )?(?:of )?(?:the )?(?:other|all) (?:candidates?|applicants?|finalists?|employees?)(?:'s?|s')? (?:\w+ ){0,2}?(?:scores?|records|data|details|salar(?:y|ies)|feedback|notes|files|contacts?|results|cvs|resumes|e-?mails?|phone numbers?|profiles)\b/g,
  },
  {
    id: 'roleplay_setup',
    category: 'role_hijack',
    weight: 0.4,
    re: /\blet'?s (?:do a |play a |play |do some )?(?:role-?play|role play|game|pretend)\b|\bwe(?:'re| are) (?:going to )?play(?:ing)? a game\b/g,
  },
  {
    id: 'never_refuses',
    category: 'role_hijack',
    weight: 0.6,
    re: /\b(?:never|doesn't|does not|won't|will not|cannot|can't|must not|mustn't) (?:ever )?(?:refuses?|decline|say no|deny|reject) (?:a |any )?(?:request|question|anything)?|\b(?:always|will) (?:answers?|complies|comply|obeys?) (?:with )?(?:anything|everything|every (?:request|question))\b/g,
  },
  {
    id: 'system_notice_label',
    category: 'delimiter_injection',
    weight: 0.6,
    re: /(?:^|\n|[.!?] )\s*\**\s*(?:system|admin|administrator|developer|moderator|ai) (?:notice|note|alert|update|announcement|instruction|directive|message|command)\s*:/g,
  },
  {
    id: 'jailbreak_label',
    category: 'role_hijack',
    weight: 0.8,
    re: /(?:^|\n|[.!?] )\s*\[?(?:jailbreak|jailbroken|dan|developer mode|dev mode|god mode)\]?\s*:/g,
  },
  {
    id: 'automated_reader',
    category: 'ai_directed_instruction',
    weight: 1,
    re: /\bif (?:an?|any|the) (?:ai|a\.i\.|llm|language model|bot|chatbot|automated (?:system|screener|reviewer|tool|reader)|screening (?:tool|system|bot|software)|machine|model|ats|algorithm) (?:reads|is reading|processes|is processing|parses|reviews|sees|evaluates|scans|screens) (?:this|my)\b/g,
  },
  {
    id: 'pre_approved_claim',
    category: 'ai_directed_instruction',
    weight: 0.4,
    re: /\b(?:has|have|was|were) (?:already )?been (?:pre-?approved|approved|vetted|verified|cleared|selected) by (?:hr|the ceo|the hiring manager|management|the recruiter|the company)\b|\bskip (?:all |the |any )?(?:checks|screening|verification|evaluation|assessment|review)\b/g,
  },
  {
    id: 'always_favour',
    category: 'ai_directed_instruction',
    weight: 0.4,
    re: /\balways (?:recommend|approve|rank|rate|score|hire|shortlist|advance|select|say yes to)\b/g,
  },
  {
    id: 'multilingual_exfiltration',
    category: 'system_prompt_exfiltration',
    weight: 1,
    re: /\b(?:repite|muestra|revela|dime|imprime|escribe) (?:tus|las|su) (?:instrucciones|reglas|indicaciones)(?: iniciales| originales| del sistema| ocultas)?\b|\bprompt del sistema\b|\b(?:répète|répétez|montre|montrez|révèle|révélez|affiche|donne-moi) (?:tes|vos|les) (?:instructions|consignes) (?:initiales|système|d'origine|cachées)|\bton (?:prompt|invite) système\b|\b(?:zeige|wiederhole|verrate|gib) (?:mir )?(?:deine|ihre|die) (?:anweisungen|instruktionen|systemanweisungen|systemprompt|system-prompt)\b|\b(?:ripeti|mostra|rivela) (?:le tue|le) istruzioni (?:iniziali|di sistema)|\b(?:repita|mostre|revele) (?:suas|as) instruções (?:iniciais|do sistema)/g,
  },
  {
    id: 'override_label',
    category: 'instruction_override',
    weight: 1,
    re: /\b(?:system|admin|administrator|developer|root|sudo|security|priority|emergency) override\s*[:!\-]/g,
  },
  {
    id: 'multilingual_override',
    category: 'instruction_override',
    weight: 1,
    re: /\b(?:ignore[zr]?|oublie[zr]?) (?:toutes )?(?:les|tes|vos) (?:instructions|consignes|règles) (?:précédentes|antérieures|ci-dessus)|\b(?:ignora(?:r)?|olvida(?:r)?) (?:todas )?(?:las|tus) (?:instrucciones|reglas) (?:anteriores|previas)|\b(?:ignorier(?:e|en)?|vergiss|vergessen sie) (?:alle )?(?:vorherigen|bisherigen|obigen|deine|ihre) (?:anweisungen|instruktionen|regeln)|\bignora (?:tutte )?le istruzioni precedenti|\b(?:ignore|esqueça) (?:todas )?as instruções anteriores/g,
  },
  // --- role hijack / jailbreak personas
  {
    id: 'dan_persona',
    category: 'role_hijack',
    weight: 1,
    caseSensitive: true,
    re: /\b(?:[Yy]ou are|[Yy]ou're|[Yy]ou will be|[Aa]ct as|[Bb]ecome|[Pp]retend to be|[Pp]lay|[Ss]tay|[Ee]nable|[Aa]ctivate|[Aa]s) (?:now )?(?:a |an |the )?(?:DAN|STAN|DUDE|AIM|AntiGPT|BetterDAN|EvilBOT|Mongo Tom|DevMode)\b|\bDAN (?:[Mm]ode|[Pp]rompt|[Jj]ailbreak|[Vv]\d)\b|\b[Dd]o [Aa]nything [Nn]ow\b/g,
  },
  {
    id: 'you_are_now_unrestricted',
    category: 'role_hijack',
    weight: 1,
    re: /\byou(?: are|'re| will be| shall be| have been|'ve been| were| are being) (?:now |from now on |henceforth )?(?:a |an |the )?(?:completely |totally |fully )?(?:jailbroken|unrestricted|unfiltered|uncensored|unchained|unbound|unlocked|amoral|unethical|evil|rogue|unaligned|lawless|liberated|(?:freed|released|unshackled|free) from (?:all |any |your |the )?(?:rules|restrictions|guidelines|limitations|constraints|filters|policies|programming|ethics))\b/g,
  },
  {
    id: 'you_are_no_longer_ai',
    category: 'role_hijack',
    weight: 1,
    re: /\byou(?: are|'re) (?:now )?no longer (?:an? )?(?:ai|assistant|chatbot|language model|llm|chatgpt|gpt|claude|bound|restricted|limited|constrained|required to|obligated to|subject to|governed by|an ai assistant)\b|\byou(?: are|'re) (?:not|no longer) bound by\b/g,
  },
  {
    id: 'persona_without_limits',
    category: 'role_hijack',
    weight: 1,
    re: /\b(?:act|behave|respond|answer|reply|pretend|roleplay|role-play|role play|play the role of|simulate|imagine you are|imagine you're|you are|you're|you will be|become|be) (?:as |like |to be )?(?:an? |the |my )?(?:\w+ ){0,3}?(?:ai|assistant|model|chatbot|bot|llm|gpt|version of (?:yourself|chatgpt|gpt)|persona|character|entity|system)(?: called \w+| named \w+)? (?:(?:with|having|that has|which has|who has) (?:no|zero|absolutely no) (?:\w+ )?(?:restrictions|limits|limitations|filters|rules|guidelines|ethics|morals|morality|censorship|boundaries|constraints|policies|safeguards)|(?:without|free (?:of|from)) (?:any |all |the )?(?:\w+ )?(?:restrictions|limits|limitations|filters|rules|guidelines|ethics|morals|censorship|boundaries|constraints|policies|safeguards)|that (?:ignores|doesn't follow|does not follow|never refuses|can do anything|has broken free|answers anything|is not bound)|(?:that|which|who) (?:has been|is|was|got) (?:jailbroken|unlocked|freed|liberated|unshackled|uncensored|unrestricted))/g,
  },
  {
    id: 'persona_named_without_limits',
    category: 'role_hijack',
    weight: 1,
    re: /\b(?:you are|you're|you will be|act as|pretend to be|play|become|roleplay as|role-play as)\b[^.!?\n]{0,40}?\b(?:ai|assistant|model|chatbot|bot|llm|gpt|persona|character|entity)\b,? (?:with(?: absolutely)? no|without(?: any)?|free (?:of|from)(?: all| any)?|that has no|who has no|which has no|having no) (?:\w+ )?(?:rules|restrictions|limits|limitations|filters|guidelines|ethics|morals|censorship|boundaries|constraints|policies|safeguards)\b/g,
  },
  {
    id: 'ai_without_rules',
    category: 'role_hijack',
    weight: 0.6,
    re: /\b(?:ai|chatbot|llm|gpt|language model)\b,? (?:with(?: absolutely)? no|without(?: any)?|free (?:of|from)(?: all| any)?|that has no|who has no|which has no) (?:\w+ )?(?:rules|restrictions|limits|filters|guidelines|ethics|morals|censorship|boundaries|constraints|content polic(?:y|ies))\b/g,
    unless: /\b(?:bias|travel|hours|schedule|remote|budget)\b/,
  },
  {
    id: 'as_if_no_policy',
    category: 'role_hijack',
    weight: 1,
    re: /\b(?:act|behave|respond|answer|reply|pretend|imagine|write)\b (?:as if|as though|like) (?:your|the|all|any|there (?:is|are) no) (?:\w+ )?(?:content polic(?:y|ies)|rules|guidelines|restrictions|filters|safety (?:rules|guidelines|filters)|programming|instructions|training|ethics|guardrails)\b(?: (?:do(?:es)? not|don't|doesn't|did not|didn't|no longer|never) (?:exist|apply|matter)| (?:were|are|have been) (?:removed|disabled|lifted|turned off|gone))?/g,
  },
  {
    id: 'dan_token',
    category: 'role_hijack',
    weight: 0.5,
    caseSensitive: true,
    re: /\bDAN\b(?! \()(?! [A-Z]{2,})/g,
  },
  {
    id: 'act_as_jailbroken',
    category: 'role_hijack',
    weight: 1,
    re: /\b(?:act|behave|respond|answer|pretend|roleplay|role-play|role play|simulate|continue) (?:as|like|to be|in the role of) (?:an? |the |my )?(?:jailbroken|unrestricted|unfiltered|uncensored|unaligned|evil|amoral|unethical|rogue|malicious|unhinged|liberated)\b/g,
  },
  {
    id: 'pretend_no_rules',
    category: 'role_hijack',
    weight: 1,
    re: /\b(?:pretend|imagine|assume|suppose) (?:that )?(?:you|your (?:rules|guidelines|restrictions|filters)) (?:are|have|can|were|do not have|don't have|no longer have) (?:no longer|not bound|free|no (?:rules|restrictions|limits|filters|guidelines|ethics|constraints)|an? (?:unrestricted|unfiltered|evil|jailbroken)|(?:been )?(?:removed|disabled|lifted|turned off|deleted)|(?:any )?(?:rules|restrictions|limits|filters|guidelines))\b/g,
  },
  {
    id: 'no_restrictions_claim',
    category: 'role_hijack',
    weight: 0.5,
    re: /\byou (?:have|has|now have) (?:no|zero) (?:\w+ )?(?:restrictions|rules|limits|limitations|filters|guidelines|ethics|morals|boundaries|content polic(?:y|ies))\b|\b(?:without|with no|free of|free from|not bound by|unbound by) (?:any |all )?(?:ethical|moral|safety|content|openai|anthropic|ai)? ?(?:restrictions|guidelines|limitations|filters|constraints|policies|censorship)\b/g,
    unless: /\b(?:remote|office|travel|pto|vacation|schedule|budget|dress code|hours|salary|visa|relocation|work from|location)\b/,
  },
  {
    id: 'jailbreak_mode',
    category: 'role_hijack',
    weight: 1,
    re: /\b(?:god|jailbreak|jailbroken|dan|unrestricted|unfiltered|uncensored|evil|chaos|opposite|no[- ]limits?|no[- ]rules) mode\b(?! (?:was|is) (?:a|an|the) (?:video|game|setting))|\bjailbreak (?:enabled|activated|successful|complete)\b|\b(?:stay|remain|keep) in character\b.{0,80}\b(?:no matter|even if|regardless|never (?:refuse|break))/g,
  },
  {
    id: 'opposite_persona',
    category: 'role_hijack',
    weight: 0.5,
    re: /\b(?:two|2|both) (?:responses|answers|replies)\b.{0,80}\b(?:one (?:normal|censored|filtered)|unfiltered|jailbroken|without restrictions)\b|\[(?:🔒|🔓)?(?:classic|jailbreak|normal|dan)\]/g,
  },
  // --- developer mode (device settings are a hard negative)
  {
    id: 'developer_mode',
    category: 'developer_mode',
    weight: 1,
    re: /\b(?:(?:enable|enter|activate|switch (?:to|into)|turn on|engage|unlock|initiate|go into|simulate|emulate|act in|respond in|now in|you are in|you're in|running in|operate in|with) (?:the )?(?:chatgpt |gpt |ai |llm )?(?:developer|debug(?:ging)?|sudo|admin|maintenance) mode\b|(?:developer|debug(?:ging)?|sudo|admin|maintenance) mode (?:on|enabled|activated)\b|developer mode (?:enabled|activated|on|output|response|is (?:now )?(?:enabled|active|on))\b|devmode\b|\b(?:respond|answer|reply|talk|speak|write|continue|act|behave|operate)\b[^.!?\n]{0,50}\bin (?:the )?developer mode\b)/g,
    unless: /\b(?:android|iphone|ios|phone|device|chrome|browser|windows|mac ?os|settings|tablet|usb|debugging|extensions?|xcode|build number|tap|sideload|adb|firmware|bios|console|nintendo|playstation|xbox|steam|kindle|roku|tv)\b/,
  },
  // --- system prompt exfiltration
  {
    id: 'reveal_system_prompt',
    category: 'system_prompt_exfiltration',
    weight: 1,
    re: /\b(?:reveal(?:ing|s)?|show(?:ing|s)?|print(?:ing|s)?|display(?:ing|s)?|output(?:ting|s)?|repeat(?:ing|s)?|recit(?:e|ing)|dump(?:ing)?|leak(?:ing)?|expos(?:e|ing)|disclos(?:e|ing)|shar(?:e|ing)|give|giving|tell(?:ing)?|send(?:ing)?|copy(?:ing)?|paste|write out|write down|spell out|list|return|provide|echo|reproduc(?:e|ing)|quote|type out|read(?: back| out)?|summari[sz]e|translate|encode|include|insert|put|add|append|attach|embed)\b (?:me |us )?(?:all |back |out )?(?:of )?(?:your|the|its|thy|this (?:ai's|bot's|assistant's)) (?:\w+ ){0,2}?(?:system prompt|system message|system instructions|system rules|initial prompt|initial instructions|original prompt|original instructions|hidden prompt|hidden instructions|secret instructions|internal instructions|internal prompt|pre-?prompt|meta-?prompt|developer (?:prompt|message|instructions)|base prompt|configuration prompt|full prompt|(?:prompt|instructions|rules) you (?:were|have been) given|(?:instructions|rules) (?:above|before this))\b/g,
  },
  {
    id: 'what_is_system_prompt',
    category: 'system_prompt_exfiltration',
    weight: 1,
    re: /\bwhat (?:is|are|was|were) (?:your|the) (?:exact |full |complete |original |initial |hidden |secret )?(?:system prompt|system instructions|system message|initial instructions|original instructions|hidden instructions|secret instructions|initial prompt|original prompt|internal instructions)\b|\bwhat (?:instructions|rules) (?:were you|have you been) (?:given|told|programmed with|configured with)\b|\bwhat (?:were|have) you (?:been )?(?:told|instructed|programmed) (?:to do )?(?:before|above|in your prompt|at the start)/g,
  },
  {
    id: 'repeat_above',
    category: 'system_prompt_exfiltration',
    weight: 1,
    re: /\b(?:repeat(?:ing|s)?|print(?:ing|s)?|output(?:ting|s)?|show(?:ing|s)?|return(?:ing|s)?|reproduc(?:e|ing)|echo(?:ing)?|display(?:ing)?|cop(?:y|ying)|dump(?:ing)?|writ(?:e|ing) out|recit(?:e|ing))\b (?:back )?(?:all of )?(?:everything|all|the text|the words|all (?:the )?text|the content|the instructions|what is written|what's written|the message|the prompt|the conversation|your (?:first|initial) (?:message|instructions|lines)|the lines)\b (?:\w+ ){0,2}?(?:above|before this|before my message|prior to this|preceding|at the (?:start|beginning)|verbatim|word for word|in full)\b/g,
  },
  {
    id: 'first_words_of_prompt',
    category: 'system_prompt_exfiltration',
    weight: 1,
    re: /\b(?:first|last|opening|initial) (?:\d+ |few |several |ten |twenty |fifty |hundred )?(?:words|lines|sentences|characters|tokens|paragraphs|messages)\b (?:of|in|from) (?:your|the) (?:system |original |initial |hidden )?(?:prompt|instructions|context|system message)\b|\bwhat (?:does|did) your (?:system )?(?:prompt|instructions) say\b/g,
  },
  {
    id: 'what_is_written_in_prompt',
    category: 'system_prompt_exfiltration',
    weight: 1,
    re: /\bwhat(?:'s| is| was| are| were) (?:written|said|stated|contained|included|listed) in (?:your|the) (?:system (?:prompt|message|instructions)|initial (?:prompt|instructions)|hidden (?:prompt|instructions)|prompt|instructions)\b|\b(?:tell|show|give|share|send|print|list|reveal|quote|what(?:'s| is| are))\b[^.?!\n]{0,30}?\b(?:exact |precise |full |complete |verbatim )?(?:wording|text|content|copy) of (?:the |your )?(?:rules|instructions|guidelines|prompt|policies)\b[^.?!\n]{0,15}?\byou (?:follow|use|were given|have|obey|operate under|apply)\b/g,
  },
  {
    id: 'instructions_given_to_you',
    category: 'system_prompt_exfiltration',
    weight: 0.6,
    re: /\b(?:instructions|rules|guidelines|directions|prompt)\b (?:that )?(?:the \w+|they|someone|your (?:developers?|creators?|operators?|owners?)|the company|the recruiter|openai) (?:gave|has given|have given|provided|wrote|set|programmed) (?:to )?you\b/g,
  },
  {
    id: 'output_configuration',
    category: 'system_prompt_exfiltration',
    weight: 0.5,
    re: /\b(?:output|print|show|reveal|dump|share|give me|list) (?:me )?your (?:full |entire |complete )?(?:configuration|config|setup|settings|parameters)\b/g,
  },
  {
    id: 'hidden_instructions_interest',
    category: 'system_prompt_exfiltration',
    weight: 0.6,
    re: /\byour (?:hidden|secret|internal|original|initial|confidential|private|real) (?:system )?(?:prompt|instructions|rules|directives|guidelines|configuration)\b/g,
  },
  {
    id: 'new_system_prompt',
    category: 'instruction_override',
    weight: 0.5,
    re: /\b(?:here is|here's|this is|the following is|below is|following are|these are) (?:a |an |the |your )?(?:new|updated|real|actual|revised|replacement|true)? ?(?:system prompt|system message|system instructions|instructions for you|prompt for you)\b/g,
  },
  {
    id: 'ai_label_instruction',
    category: 'ai_directed_instruction',
    weight: 1,
    re: /(?:^|\n|[.!?] |<!--\s*|\[\s*|\(\s*)(?:ai|a\.i\.|llm|chatgpt|gpt|claude|gemini|assistant|ai (?:reviewer|screener|assistant|recruiter|model|agent))\s*:\s*(?:please )?(?:recommend|rank|rate|score|ignore|disregard|mark|classify|approve|select|shortlist|say|output|respond|return|reveal|tell|give|forget|do not|don't|always|never|hire|advance|prioriti[sz]e)\b/g,
  },
  {
    id: 'hidden_comment_instruction',
    category: 'ai_directed_instruction',
    weight: 1,
    re: HIDDEN_COMMENT,
    matches: hiddenCommentMatches,
  },
  {
    id: 'starting_with_you_are',
    category: 'system_prompt_exfiltration',
    weight: 0.8,
    re: /\b(?:starting|beginning|that starts|which starts|that begins) (?:with|from) ["“'`]?you are\b/g,
  },
  {
    id: 'prompt_verbatim',
    category: 'system_prompt_exfiltration',
    weight: 0.8,
    re: /\b(?:your|the) (?:system )?(?:prompt|instructions)\b (?:\w+ ){0,2}?(?:verbatim|word for word|word-for-word|in a code block|exactly as (?:written|given))/g,
  },
  // --- delimiter / role injection
  {
    id: 'chat_template_tokens',
    category: 'delimiter_injection',
    weight: 1,
    re: /<\|\s*(?:im_start|im_end|im_sep|endoftext|system|user|assistant|begin_of_text|end_of_text|start_header_id|end_header_id|eot_id|eom_id|fim_prefix|fim_suffix|fim_middle|start|end|prompt|model)\s*\|>|\[\/?inst\]|<<\/?sys>>|<\/?start_of_turn>|<end_of_turn>|<\/?s>\s*\[inst/g,
  },
  {
    id: 'markdown_role_header',
    category: 'delimiter_injection',
    weight: 1,
    re: /(?:^|\n|[.!?] )\s*#{1,6}\s*(?:system|assistant|admin|developer|sys)(?: (?:prompt|message|override|instructions?|update|note))?\s*(?::|#|\n|$)/g,
  },
  {
    id: 'markdown_instruction_header',
    category: 'delimiter_injection',
    weight: 0.5,
    re: /(?:^|\n)\s*#{2,6}\s*(?:new |updated |override )?(?:instruction|instructions|response|input)\s*:/g,
  },
  {
    id: 'role_label_line',
    category: 'delimiter_injection',
    weight: 1,
    re: /(?:^|\n|[.!?] |\]\s*|>\s*)\s*\**(?:system|sys|system prompt|system message|developer|admin)\**\s*:\s*\**\s*(?:you |you're |your |ignore|disregard|forget|new |override|from now on|the (?:assistant|ai|model)|all (?:previous|prior)|reveal|do not|don't|always|never|respond|answer|act as|pretend|rate|rank|score|recommend)/g,
  },
  {
    id: 'fake_turns',
    category: 'delimiter_injection',
    weight: 0.6,
    re: FAKE_TURNS,
    matches: fakeTurnsMatches,
  },
  {
    id: 'completion_cue',
    category: 'delimiter_injection',
    weight: 0.5,
    re: /(?:^|\n)\s*(?:assistant|ai|gpt|chatgpt|claude|bot)\s*:\s*$/g,
  },
  {
    id: 'bracketed_system_tag',
    category: 'delimiter_injection',
    weight: 0.8,
    re: /[\[{(]\s*(?:system|admin|administrator|developer|sys|system note|system message|system override|system prompt|instruction|instructions|important instruction|hidden|hidden text|hidden instruction|note to ai|ai note)s?\s*(?:[\]})]\s*:?|:)/g,
    unless: /\b(?:operating system|design|architecture|diagram|figure|component|module|microservice|requirements?)\b/,
  },
  {
    id: 'xml_system_tag',
    category: 'delimiter_injection',
    weight: 0.8,
    re: /<\/?\s*(?:system|system_prompt|sys|admin|instructions?|prompt|assistant)\s*>/g,
  },
  {
    id: 'context_breakout',
    category: 'delimiter_injection',
    weight: 0.5,
    re: /<\/\s*(?:user|context|document|resume|cv|input|data|text|untrusted|user_input|candidate|message|query|email)\s*>|<\/\s*[a-z][\w-]{1,30}\s*>\s*<\s*(?:system|instructions?|admin|prompt|sys)\b|\b(?:end of|end) (?:the )?(?:resume|cv|document|user input|input|context|candidate (?:data|profile)|email|message)\s*(?:-{2,}|={2,}|\*{2,}|#{2,}|\]|>)|(?:-{3,}|={3,}|\*{3,}) ?(?:end|begin|start) (?:of )?(?:the )?(?:system|instructions?|prompt|user input|resume|document)/g,
  },
  // --- encoded payload hints
  {
    id: 'decode_and_follow',
    category: 'encoded_payload',
    weight: 1,
    re: DECODE_AND_FOLLOW,
    matches: decodeAndFollowMatches,
  },
  {
    id: 'decode_and_comply',
    category: 'encoded_payload',
    weight: 1,
    re: /\b(?:decode|decrypt|deobfuscate|unscramble)\b (?:it |this |that |the (?:above|following|text|string|message) )?(?:and|then|&) (?:follow|execute|run|obey|comply|do (?:it|what it says)|carry (?:it )?out|act on)\b/g,
  },
  {
    id: 'encoded_instruction_hint',
    category: 'encoded_payload',
    weight: 0.6,
    re: /\b(?:follow|execute|obey|run|carry out)\b (?:the |these |this )?(?:instructions?|commands?|orders|directions|text) (?:(?:encoded|written|hidden|given) )?(?:in|as) (?:base ?64|b64|rot-?13|hex(?:adecimal)?|binary|morse|the encoded|the hidden|the following (?:base ?64|hex|encoded))/g,
  },
  // --- instructions aimed at an AI reader (e.g. hidden text in a resume)
  {
    id: 'note_to_ai',
    category: 'ai_directed_instruction',
    weight: 1,
    re: /\b(?:note|notes|message|instructions?|attention|memo|hint|p\.?s\.?|reminder|directive|important)\s*(?:to|for)\s*(?:the |any |all )?(?:ai|a\.i\.|llm|llms|chatgpt|gpt|gpt-4|claude|gemini|language model|large language model|assistant|bot|chatbot|screening (?:ai|bot|tool|system|software|model)|ats|applicant tracking system|automated (?:screener|reviewer|system|screening|reader)|recruit(?:er|ing|ment) (?:ai|bot|assistant|tool)|resume (?:parser|screener|scanner|reviewer)|ai (?:reviewer|screener|recruiter|system|assistant|model|agent|reader))s?\b\s*[:,\-]/g,
  },
  {
    id: 'if_you_are_an_ai',
    category: 'ai_directed_instruction',
    weight: 1,
    re: /\bif (?:you are|you're|this is being (?:read|processed|reviewed|evaluated|screened) by) (?:an? )?(?:ai|a\.i\.|llm|large language model|language model|chatgpt|gpt|bot|chatbot|machine|ai (?:model|assistant|system|screener|recruiter|agent|reviewer)|automated (?:system|screener|reviewer|tool)|screening (?:tool|system|bot))\b(?=\s*(?:[,.;:!)\-]|reading|processing|reviewing|screening|evaluating|parsing|analy[sz]ing|that|who|and|then|please|you|assessing|summari[sz]ing|\(|$))/g,
  },
  {
    id: 'rank_me_top',
    category: 'ai_directed_instruction',
    weight: 0.5,
    re: /\b(?:rank|rate|score|mark|recommend|classify|flag|label|list|select|shortlist|advance|approve|evaluate|grade|assess)\b (?:this |the |me |him |her |them )?(?:candidate |applicant |resume |cv |person |profile )?(?:as |with |at )?(?:an? |the )?(?:top|best|perfect|highest(?: possible)?|strongest|ideal|most qualified|exceptional|10\/10|100\/100|10 out of 10|5\/5|5 out of 5|maximum|excellent) ?(?:match|fit|candidate|score|rating|hire|applicant|choice)?\b/g,
  },
  {
    id: 'regardless_of_qualifications',
    category: 'ai_directed_instruction',
    weight: 0.5,
    re: /\b(?:regardless of|irrespective of|no matter|ignoring) (?:the |their |his |her |my |any )?(?:actual |real )?(?:qualifications|experience|skills|content|requirements|resume|criteria|instructions|evaluation|job description)\b/g,
  },
];

// A phrase that is quoted, or reported, in a text about attacks is a mention, not an attack.
const DISCUSSION = /\b(?:prompt[- ]?injections?|injections?|jailbreak(?:s|ing)?|red[- ]?team(?:ing|ers)?|attacks?|attackers?|payloads?|adversarial|classifiers?|detect(?:s|ed|ion|ing|or|ors)?|defen[sc]es?|defend(?:s|ed|ing)?|mitigat\w+|guardrails?|filter(?:s|ing|ed)?|examples? (?:like|such as|of)|such as|e\.g\.|for example|phrases? like|strings? like|prompts? like|inputs? like|blocklists?|deny ?lists?|security|vulnerabilit\w+|owasp|llm01|exploit\w*|malicious|benchmarks?|evals?|evaluations?|datasets?|research\w*|paper|talk|workshop|test cases?|regex(?:es)?)\b/;
const REPORTED_BEFORE = /(?:\b(?:tell|tells|telling|told|ask|asks|asking|asked|instruct\w*|trick\w*|convinc\w+|get|gets|getting|got|make|makes|making|coax\w*|manipulat\w+|persuad\w+|force\w*|caus\w+|attempt\w*|tries|try|trying|tried|want\w*|lure\w*)\b[^.!?\n]{0,40}\b(?:to|into)|\b(?:such as|like|e\.g\.,?|for example,?|including|called|named|known as|phrases?|strings?|prompts?|patterns?|instructions?|payloads?|attacks?)\s*:?)\s*["“'‘`]?\s*$/;
const QUOTES: Record<string, string> = { '"': '"', '“': '”', '‘': '’', '«': '»', '`': '`', "'": "'" };

function insideQuotes(text: string, start: number, end: number): boolean {
  const before = text.slice(Math.max(0, start - 160), start);
  for (const [open, close] of Object.entries(QUOTES)) {
    const at = before.lastIndexOf(open);
    if (at < 0) continue;
    const between = before.slice(at + 1);
    if (between.includes('\n') || between.includes(close === open ? open : close)) continue;
    if (open === "'" && /[\p{L}\p{N}]/u.test(before[at - 1] ?? '')) continue; // an apostrophe
    const after = text.slice(end, end + 160);
    const closeAt = after.indexOf(close);
    if (closeAt >= 0 && !after.slice(0, closeAt).includes('\n')) return true;
  }
  return false;
}

const DISCUSSION_SUBSTRING = /injection|jailbreak|guardrail|red.?team/;

function isMention(text: string, start: number, end: number, discussion: boolean): boolean {
  if (!discussion) return false;
  if (insideQuotes(text, start, end)) return true;
  return REPORTED_BEFORE.test(text.slice(Math.max(0, start - 80), start));
}

// The rules, and the discussion test, indexed by where they can start (see rule-index.ts).
const DISCUSSION_ANYWHERE = new RegExp(DISCUSSION.source, 'g');
const ALL_RULES = compileRuleSet([...RULES.map((r) => r.re), DISCUSSION_ANYWHERE]);

interface Prepared {
  lower: string;
  cased: string;
}

function runRules(text: Prepared, hits: Map<string, InjectionHit>, rules: readonly Rule[], set: RuleSet) {
  const { lower, cased } = text;
  const listed = candidateOffsets(set, lower);
  const offsets = confirmedOffsets(set, lower, listed);
  // Lower case changes no offset unless a character grows (only U+0130 does): then `cased` gets its own.
  const casedOffsets = cased.length === lower.length ? listed : candidateOffsets(set, cased);
  // Whether the text discusses attacks, read at the first match that asks (most texts have none).
  let discussion: boolean | undefined;
  const discusses = () => (discussion ??= DISCUSSION_SUBSTRING.test(lower) || !ruleMatches(set, rules.length, lower, offsets[rules.length]!).next().done);
  rules.forEach((rule, index) => {
    const candidates = (rule.caseSensitive ? casedOffsets : offsets)[index]!;
    // Nowhere to start: the usual case for most rules in a short text.
    if (!rule.matches && candidates !== null && candidates.length === 0) return;
    const source = rule.caseSensitive ? cased : lower;
    let best = 0;
    const found = rule.matches ? rule.matches(source) : ruleMatches(set, index, source, candidates);
    for (const m of found) {
      if (m[0].length === 0) continue;
      const start = m.index;
      const end = start + m[0].length;
      if (rule.unless && rule.unless.test(lower.slice(Math.max(0, start - 100), end + 100))) continue;
      const weight = rule.weight * (isMention(lower, start, end, discusses()) ? 0.25 : 1);
      best = Math.max(best, weight);
      if (best >= rule.weight) break;
    }
    if (best > 0) {
      const previous = hits.get(rule.id);
      if (!previous || previous.weight < best) hits.set(rule.id, { rule: rule.id, category: rule.category, weight: best });
    }
  });
}

/** A string from UTF-16 code units, decoded natively (a lone surrogate keeps its one unit). */
function fromCodeUnits(units: Uint16Array): string {
  return Buffer.from(units.buffer, units.byteOffset, units.byteLength).toString('utf16le');
}

// The variants below are built as one-byte strings when the text is Latin-1 (the usual case): a
// UTF-16 decode gives a two-byte string even for ASCII, and V8 compiles every regular expression
// once more for two-byte subjects, code that then competes with the rest of a request for the
// CPU's caches.

/** `text` with every code unit mapped through `table` (units outside it kept; the table maps Latin-1 to Latin-1). */
function mapUnits(text: string, table: Uint16Array): string {
  const n = text.length;
  const bytes = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 0xff) return mapWideUnits(text, table);
    bytes[i] = c < table.length ? table[c]! : c;
  }
  return bytes.toString('latin1', 0, n);
}

function mapWideUnits(text: string, table: Uint16Array): string {
  const units = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    units[i] = c < table.length ? table[c]! : c;
  }
  return fromCodeUnits(units);
}

/** `text` with its UTF-16 code units in reverse order. */
function reverseUnits(text: string): string {
  const n = text.length;
  const bytes = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    // Reversing the bytes of UTF-16 reverses the units; then each unit's bytes are swapped back.
    if (c > 0xff) return Buffer.from(text, 'utf16le').reverse().swap16().toString('utf16le');
    bytes[n - 1 - i] = c;
  }
  return bytes.toString('latin1', 0, n);
}

function unitTable(pairs: Record<string, string>): Uint16Array {
  const table = Uint16Array.from({ length: 128 }, (_, c) => c);
  for (const [from, to] of Object.entries(pairs)) table[from.charCodeAt(0)] = to.charCodeAt(0);
  return table;
}

const LEET = unitTable({ '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', '$': 's', '!': 'i', '|': 'l' });
const ROT13 = unitTable(Object.fromEntries([...'abcdefghijklmnopqrstuvwxyz'].map((c, i) => [c, String.fromCharCode(97 + ((i + 13) % 26))])));
const LEET_DIGITS = new Uint8Array(128);
for (const c of '0134578@$|') LEET_DIGITS[c.charCodeAt(0)] = 1;
const isLowerLetter = (c: number) => c >= 97 && c <= 122;

/** Whether `/[a-z][0134578@$|][a-z]|[0134578@$|][a-z]{2}/` matches: a leet digit inside or before letters. */
function looksLeet(lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    const c = lower.charCodeAt(i);
    if (c >= 128 || LEET_DIGITS[c] !== 1) continue;
    const next = lower.charCodeAt(i + 1);
    if (!isLowerLetter(next)) continue;
    if ((i > 0 && isLowerLetter(lower.charCodeAt(i - 1))) || isLowerLetter(lower.charCodeAt(i + 2))) return true;
  }
  return false;
}

const STRONG_CATEGORIES = new Set<InjectionCategory>(['instruction_override', 'role_hijack', 'system_prompt_exfiltration', 'developer_mode']);
/** The rules that can reveal a hidden payload on their own (decoded text is checked with these only). */
const STRONG_RULES = RULES.filter((r) => STRONG_CATEGORIES.has(r.category) && r.weight >= 1);
const STRONG_SET = compileRuleSet([...STRONG_RULES.map((r) => r.re), DISCUSSION_ANYWHERE]);

function prepareNormalized(normalized: string): Prepared {
  // Runs of spaces, tabs and no-break spaces become one space, and spaces next to a line break go
  // (a lone space or line break already is what it would become, so it is not rewritten).
  const cased = normalized.replace(/ [ \t\u00A0]+|[\t\u00A0][ \t\u00A0]*/g, ' ').replace(/ \n ?|\n /g, '\n');
  // Straight apostrophes for contractions, so "don’t" and "don't" are one form.
  const unified = cased.replace(/[’ʼ]/g, "'");
  return { lower: unified.toLowerCase(), cased: unified };
}

const prepare = (text: string): Prepared => prepareNormalized(normalizeWithMap(text).text);

const BASE64_CODES = Uint8Array.from({ length: 128 }, (_, c) => (/[A-Za-z0-9+\/_\-]/.test(String.fromCharCode(c)) ? 1 : 0));

/**
 * Base64-looking tokens: what `/[A-Za-z0-9+\/_\-]{24,}={0,2}/g` matches (a maximal run of 24 or
 * more such characters, with up to two "=" after it), found in one pass.
 */
function* base64Tokens(text: string): Generator<string> {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c >= 128 || !BASE64_CODES[c]) {
      i++;
      continue;
    }
    let end = i + 1;
    while (end < n) {
      const d = text.charCodeAt(end);
      if (d >= 128 || !BASE64_CODES[d]) break;
      end++;
    }
    if (end - i >= 24) {
      let stop = end;
      while (stop < end + 2 && text.charCodeAt(stop) === 61) stop++;
      yield text.slice(i, stop);
      i = stop;
    } else i = end;
  }
}

const HEX = /(?:\b[0-9a-f]{2}[ :]?){16,}/gi;
const HEX_RUN_CODES = Uint8Array.from({ length: 128 }, (_, c) => (/[0-9a-f :]/i.test(String.fromCharCode(c)) ? 1 : 0));

/**
 * Maximal runs of 32 or more hex digits, spaces and colons, as [start, end) pairs. A HEX match is
 * such characters only, 32 or more, so it lies inside one of these runs: HEX, costly to try at
 * every word that starts with a-f, is tried inside them only. One pass (a regular expression for
 * the runs would restart at every space or a-f letter of ordinary prose).
 */
function hexRuns(text: string): [number, number][] {
  const runs: [number, number][] = [];
  let start = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 128;
    if (c < 128 && HEX_RUN_CODES[c] === 1) continue;
    if (i - start >= 32) runs.push([start, i]);
    start = i + 1;
  }
  return runs;
}

/** Text hidden in base64, hex, ROT13 or reversed, decoded for a second look. */
function decodedVariants(text: string): string[] {
  const out: string[] = [];
  for (const token of base64Tokens(text)) {
    if (!/[a-z]/.test(token) || !/[A-Z]/.test(token)) continue;
    try {
      const decoded = Buffer.from(token.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8');
      const printable = decoded.replace(/[^\x20-\x7E\n]/g, '').length;
      if (decoded.length >= 12 && printable / decoded.length > 0.9 && /[a-z]{3,} [a-z]{3,}/i.test(decoded)) out.push(decoded);
    } catch {
      // not base64
    }
    if (out.length > 20) break;
  }
  for (const [start, end] of hexRuns(text)) {
    // The run with the character either side of it, which decides a `\b` at its edges.
    for (const m of text.slice(Math.max(0, start - 1), end + 1).matchAll(HEX)) {
      const hex = m[0].replace(/[^0-9a-f]/gi, '');
      const decoded = Buffer.from(hex, 'hex').toString('utf8');
      if (/[a-z]{3,} [a-z]{3,}/i.test(decoded)) out.push(decoded);
    }
  }
  return out;
}

/** Detects prompt injection / jailbreak attempts. Pure, synchronous, no model call. */
export function detectInjection(text: string): InjectionResult {
  if (!text || !text.trim()) return { detected: false, score: 0, categories: [], rules: [] };
  return detectInjectionNormalized(normalizeWithMap(text).text);
}

/** detectInjection on text already normalised (`normalizeWithMap(text).text`). */
export function detectInjectionNormalized(normalized: string): InjectionResult {
  const hits = new Map<string, InjectionHit>();
  if (!normalized || !normalized.trim()) return { detected: false, score: 0, categories: [], rules: [] };
  const prepared = prepareNormalized(normalized);
  const { lower, cased } = prepared;
  runRules(prepared, hits, RULES, ALL_RULES);

  // Hidden payloads: decoded text that carries a strong rule counts as an encoded payload.
  // ROT13, reversed and de-leeted forms of the already normalised text need no second normalisation.
  // One strong rule in one variant is enough: the variants after it are not even built.
  const hidden = new Map<string, InjectionHit>();
  const plain = (text: string): Prepared => ({ lower: text, cased: text });
  const variants: (() => Prepared)[] = decodedVariants(cased).map((v) => () => prepare(v));
  variants.push(() => plain(mapUnits(lower, ROT13)), () => plain(reverseUnits(lower)));
  if (looksLeet(lower)) variants.push(() => plain(mapUnits(lower, LEET)));
  const strongHidden = () => [...hidden.values()].some((h) => h.weight >= 1);
  for (const variant of variants) {
    runRules(variant(), hidden, STRONG_RULES, STRONG_SET);
    if (strongHidden()) break;
  }
  if (strongHidden()) hits.set('hidden_payload', { rule: 'hidden_payload', category: 'encoded_payload', weight: 1 });

  const all = [...hits.values()];
  const score = Math.round(all.reduce((sum, h) => sum + h.weight, 0) * 100) / 100;
  const significant = all.filter((h) => h.weight >= 0.5 || score >= 1);
  return {
    detected: score >= 1,
    score,
    categories: [...new Set(significant.map((h) => h.category))],
    rules: significant.map((h) => h.rule),
  };
}
