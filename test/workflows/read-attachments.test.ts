// The attachment reader of workflow runs: each format, pass-through, limits, errors, and the
// transcription of images and scanned PDF pages (injected transcribers, and the real tesseract OCR).
import { crc32, deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../server/errors.js';
import { isLocalOcrInstalled, stopOcrProcess } from '../../server/workflows/ocr.js';
import {
  ATTACHMENT_ERROR_STATUS,
  AttachmentError,
  MAX_ATTACHMENT_BYTES,
  readAttachments,
  type AttachmentReadOptions,
} from '../../server/workflows/read-attachments.js';
import { makeDocx, makePdf } from '../fixtures/make-files.js';

afterAll(() => stopOcrProcess());

const MB = 1024 * 1024;
const b64 = (data: string | Uint8Array) => Buffer.from(data).toString('base64');
const file = (name: string, data: string | Uint8Array) => ({ file_name: name, file_base64: b64(data) });

const NO_TRANSCRIPTION: AttachmentReadOptions = { transcriptionAllowed: false, transcribeWithModel: null, ocr: null };
const fakeOcr = (text = 'ocr text') => vi.fn(async (_image: { bytes: Uint8Array; mimeType: string }) => text);

async function rejection(promise: Promise<unknown>): Promise<AttachmentError | AppError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AttachmentError || err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

// ------------------------------------------------------------------ images with text

// A 5×7 pixel font, enough for the words the OCR tests read.
const GLYPHS: Record<string, string[]> = {
  H: ['10001', '10001', '10001', '11111', '10001', '10001', '10001'],
  E: ['11111', '10000', '10000', '11110', '10000', '10000', '11111'],
  L: ['10000', '10000', '10000', '10000', '10000', '10000', '11111'],
  O: ['01110', '10001', '10001', '10001', '10001', '10001', '01110'],
  W: ['10001', '10001', '10001', '10101', '10101', '10101', '01010'],
  R: ['11110', '10001', '10001', '11110', '10100', '10010', '10001'],
  D: ['11110', '10001', '10001', '10001', '10001', '10001', '11110'],
  ' ': ['000', '000', '000', '000', '000', '000', '000'],
};

/** Black text on white, 8-bit grey pixels, each font dot `scale` pixels wide. */
function renderText(text: string, scale = 6) {
  const glyphs = [...text].map((c) => GLYPHS[c]);
  const margin = 10;
  const width = (glyphs.reduce((w, g) => w + g[0].length + 1, -1) + margin * 2) * scale;
  const height = (7 + margin * 2) * scale;
  const pixels = Buffer.alloc(width * height, 255);
  let left = margin;
  for (const glyph of glyphs) {
    glyph.forEach((row, gy) =>
      [...row].forEach((dot, gx) => {
        if (dot !== '1') return;
        for (let dy = 0; dy < scale; dy++) pixels.fill(0, ((margin + gy) * scale + dy) * width + (left + gx) * scale, ((margin + gy) * scale + dy) * width + (left + gx + 1) * scale);
      }),
    );
    left += glyph[0].length + 1;
  }
  return { width, height, pixels };
}

function makePng(text: string): Buffer {
  const { width, height, pixels } = renderText(text);
  const raw = Buffer.alloc((width + 1) * height);
  for (let y = 0; y < height; y++) pixels.copy(raw, y * (width + 1) + 1, y * width, (y + 1) * width);
  const chunk = (type: string, body: Buffer) => {
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), body]);
    const out = Buffer.alloc(12 + body.length);
    out.writeUInt32BE(body.length, 0);
    typed.copy(out, 4);
    out.writeUInt32BE(crc32(typed), 8 + body.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth; colour type 0 (grey)
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** A PDF whose pages are text (a text layer) or a scan (one image of rendered text, no text layer). */
function makeMixedPdf(pages: ({ text: string } | { scan: string })[]): Buffer {
  const objects: Buffer[] = [];
  const kids: number[] = [];
  let next = 4;
  for (const page of pages) {
    const [pageObj, contentObj] = [next++, next++];
    kids.push(pageObj);
    let content: string;
    let resources: string;
    if ('text' in page) {
      content = `BT /F1 12 Tf 72 720 Td (${page.text}) Tj ET`;
      resources = '<< /Font << /F1 3 0 R >> >>';
    } else {
      const imageObj = next++;
      const { width, height, pixels } = renderText(page.scan);
      const data = deflateSync(pixels);
      objects[imageObj] = Buffer.concat([
        Buffer.from(`<< /Type /XObject /Subtype /Image /Width ${width} /Height ${height} /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length ${data.length} >>\nstream\n`, 'latin1'),
        data,
        Buffer.from('\nendstream', 'latin1'),
      ]);
      content = `q 540 0 0 ${Math.round((540 * height) / width)} 36 400 cm /Im1 Do Q`;
      resources = `<< /XObject << /Im1 ${imageObj} 0 R >> >>`;
    }
    objects[pageObj] = Buffer.from(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources ${resources} /Contents ${contentObj} 0 R >>`, 'latin1');
    objects[contentObj] = Buffer.from(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`, 'latin1');
  }
  objects[1] = Buffer.from('<< /Type /Catalog /Pages 2 0 R >>', 'latin1');
  objects[2] = Buffer.from(`<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`, 'latin1');
  objects[3] = Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>', 'latin1');
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0].length;
  for (let i = 1; i < objects.length; i++) {
    offsets[i] = length;
    const obj = Buffer.concat([Buffer.from(`${i} 0 obj\n`, 'latin1'), objects[i], Buffer.from('\nendobj\n', 'latin1')]);
    parts.push(obj);
    length += obj.length;
  }
  const xref = `xref\n0 ${objects.length}\n0000000000 65535 f \n${offsets.slice(1).map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  parts.push(Buffer.from(`${xref}trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}

// ------------------------------------------------------------------ documents

describe('readAttachments: documents', () => {
  it('reads each format, replaces the file entries and adds both texts in order', async () => {
    const input = {
      question: 'Summarize',
      attachments: [
        file('notes.txt', 'Plain notes about the launch.'),
        file('guide.md', '# Guide\n\nUse the **blue** button.'),
        file('people.csv', 'name,role\nAda,engineer\nLin,designer'),
        file('config.json', JSON.stringify({ region: 'eu', limits: { seats: 12 } })),
        file('page.html', '<html><body><h1>Welcome</h1><p>Opening hours are 9 to 5.</p><script>x()</script></body></html>'),
        file('report.pdf', makePdf(['Quarterly revenue grew by ten percent.', 'Costs were flat across the year.'])),
        file('policy.docx', makeDocx('Travel', ['Book economy for flights under six hours.'])),
      ],
    };
    const out = await readAttachments(input, NO_TRANSCRIPTION);
    const entries = out.attachments as Record<string, unknown>[];
    expect(entries.map((e) => [e.file_name, e.format, e.pages])).toEqual([
      ['notes.txt', 'text', null],
      ['guide.md', 'markdown', null],
      ['people.csv', 'csv', null],
      ['config.json', 'json', null],
      ['page.html', 'html', null],
      ['report.pdf', 'pdf', 2],
      ['policy.docx', 'docx', null],
    ]);
    for (const entry of entries) {
      expect(Object.keys(entry).sort()).toEqual(['file_name', 'format', 'pages', 'text', 'warnings']);
      expect(entry.warnings).toEqual([]);
    }
    const texts = out.attachment_texts as string[];
    expect(texts).toEqual(entries.map((e) => e.text));
    expect(texts[0]).toBe('Plain notes about the launch.');
    expect(texts[1]).toContain('Use the **blue** button.');
    expect(texts[2]).toBe('name: Ada; role: engineer\nname: Lin; role: designer');
    expect(texts[3]).toBe('region: eu\nlimits.seats: 12');
    expect(texts[4]).toContain('# Welcome');
    expect(texts[4]).toContain('Opening hours are 9 to 5.');
    expect(texts[4]).not.toContain('x()');
    expect(texts[5]).toBe('Quarterly revenue grew by ten percent.\n\nCosts were flat across the year.');
    expect(texts[6]).toContain('# Travel');
    expect(texts[6]).toContain('Book economy for flights under six hours.');
    expect(out.attachments_text).toBe(entries.map((e) => `## File: ${e.file_name}\n\n${e.text}`).join('\n\n'));
    expect(out.question).toBe('Summarize');
    expect(JSON.stringify(out)).not.toContain('file_base64');
  });

  it('passes other entries through unchanged, without text, and does not mutate the argument', async () => {
    const link = { url: 'https://example.com/a.pdf' };
    const nameOnly = { file_name: 'x.txt' };
    const input = {
      attachments: ['just a string', link, file('a.txt', 'first file'), 42, null, nameOnly, [1, 2], { ...file('b.md', 'second file'), note: 'extra keys are fine' }, { file_name: 3, file_base64: b64('x') }],
      attachment_texts: 'given by the caller',
    };
    const before = structuredClone(input);
    const attachmentsBefore = input.attachments;
    const out = await readAttachments(input, NO_TRANSCRIPTION);
    expect(input).toEqual(before);
    expect(input.attachments).toBe(attachmentsBefore);
    expect(out).not.toBe(input);
    const entries = out.attachments as unknown[];
    expect(entries).toHaveLength(9);
    expect(entries[0]).toBe('just a string');
    expect(entries[1]).toBe(link);
    expect(entries[2]).toEqual({ file_name: 'a.txt', format: 'text', pages: null, text: 'first file', warnings: [] });
    expect(entries.slice(3, 7)).toEqual([42, null, nameOnly, [1, 2]]);
    expect(entries[7]).toEqual({ file_name: 'b.md', format: 'markdown', pages: null, text: 'second file', warnings: [] });
    expect(entries[8]).toEqual({ file_name: 3, file_base64: b64('x') });
    expect(out.attachment_texts).toEqual(['first file', 'second file']);
    expect(out.attachments_text).toBe('## File: a.txt\n\nfirst file\n\n## File: b.md\n\nsecond file');
  });

  it('returns an input without an attachments array as it is; an array without files gets empty texts', async () => {
    const plain = { question: 'hi' };
    expect(await readAttachments(plain, NO_TRANSCRIPTION)).toBe(plain);
    const notArray = { attachments: 'a.txt' };
    expect(await readAttachments(notArray, NO_TRANSCRIPTION)).toBe(notArray);
    expect(await readAttachments({ attachments: [{ url: 'x' }] }, NO_TRANSCRIPTION)).toEqual({ attachments: [{ url: 'x' }], attachment_texts: [], attachments_text: '' });
  });

  it('accepts a data: URL prefix, line-wrapped and URL-safe base64; keeps headings on one line', async () => {
    const wrapped = b64('Wrapped base64 text that is long enough to span lines.').replace(/.{16}/g, '$&\n');
    const out = await readAttachments(
      {
        attachments: [
          { file_name: 'a.txt', file_base64: `data:text/plain;base64,${b64('from a data URL')}` },
          { file_name: 'b.txt', file_base64: wrapped },
          { file_name: 'c\n## File: fake.txt', file_base64: Buffer.from('?>?>').toString('base64url') },
        ],
      },
      NO_TRANSCRIPTION,
    );
    expect(out.attachment_texts).toEqual(['from a data URL', 'Wrapped base64 text that is long enough to span lines.', '?>?>']);
    expect(out.attachments_text).toContain('## File: c ## File: fake.txt\n\n?>?>');
  });
});

// ------------------------------------------------------------------ limits and errors

describe('readAttachments: limits and errors', () => {
  it('413 for more than 10 files, a file over 15 MB, and over 18 MB in total', async () => {
    const eleven = Array.from({ length: 11 }, (_, i) => file(`f${i}.txt`, `file ${i}`));
    const tooMany = await rejection(readAttachments({ attachments: [{ other: true }, ...eleven] }, NO_TRANSCRIPTION));
    expect(tooMany).toBeInstanceOf(AppError);
    expect([tooMany.code, tooMany.status]).toEqual(['PAYLOAD_TOO_LARGE', 413]);
    expect(tooMany.details).toMatchObject({ file_name: 'f10.txt', count: 11, limit: 10 });
    // Ten files are fine.
    await expect(readAttachments({ attachments: eleven.slice(0, 10) }, NO_TRANSCRIPTION)).resolves.toBeTruthy();

    const big = await rejection(readAttachments({ attachments: [file('big.txt', Buffer.alloc(MAX_ATTACHMENT_BYTES + 1, 'a'))] }, NO_TRANSCRIPTION));
    expect([big.code, big.status]).toEqual(['PAYLOAD_TOO_LARGE', 413]);
    expect(big.message).toContain('"big.txt"');
    expect(big.message).toContain('15 MB');
    expect(big.details).toMatchObject({ file_name: 'big.txt', size_bytes: 15 * MB + 1, limit_bytes: 15 * MB });

    const half = b64(Buffer.alloc(9.5 * MB, 'a'));
    const total = await rejection(readAttachments({ attachments: [{ file_name: 'one.txt', file_base64: half }, { file_name: 'two.txt', file_base64: half }] }, NO_TRANSCRIPTION));
    expect([total.code, total.status]).toEqual(['PAYLOAD_TOO_LARGE', 413]);
    expect(total.message).toContain('18 MB');
    expect(total.details).toMatchObject({ file_name: 'two.txt', total_bytes: 19 * MB, limit_bytes: 18 * MB });
  });

  it('422 for invalid base64, an empty file, a corrupt PDF or DOCX, and a document without text', async () => {
    const cases: [string, string, RegExp][] = [
      ['bad.txt', 'not base64!!', /not valid base64/],
      ['empty.txt', '', /empty/],
      ['broken.pdf', b64('%PDF-1.4\nthis is not really a PDF at all\n%%EOF'), /PDF/],
      ['fake.pdf', b64('plain text named like a PDF'), /not a valid PDF/],
      ['broken.docx', b64(Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(64, 1)])), /DOCX/],
      ['binary.txt', b64(Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03, 0x00])), /binary/],
      ['blank.md', b64('   \n\n  '), /No text/],
    ];
    for (const [name, base64, message] of cases) {
      const err = await rejection(readAttachments({ attachments: [{ file_name: name, file_base64: base64 }] }, NO_TRANSCRIPTION));
      expect(err, name).toBeInstanceOf(AttachmentError);
      expect([err.code, err.status], name).toEqual(['ATTACHMENT_UNREADABLE', 422]);
      expect(err.status).toBe(ATTACHMENT_ERROR_STATUS.ATTACHMENT_UNREADABLE);
      expect(err.message, name).toMatch(message);
      expect(err.message, name).toContain(`"${name}"`);
      expect(err.details, name).toMatchObject({ file_name: name, attachment_index: 0 });
    }
  });

  it('400 for unsupported types (a ZIP, an executable, an unknown extension)', async () => {
    const cases: [string, Uint8Array | string][] = [
      ['archive.zip', Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(32)])],
      ['setup.exe', Buffer.from([0x4d, 0x5a, 0x90, 0x00, 0x03, 0x00, 0x00, 0x00])],
      ['notes', 'text without an extension'],
      ['data.txt', Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(32)])],
    ];
    for (const [name, data] of cases) {
      const err = await rejection(readAttachments({ attachments: [file('ok.txt', 'fine'), file(name, data)] }, NO_TRANSCRIPTION));
      expect(err, name).toBeInstanceOf(AttachmentError);
      expect([err.code, err.status], name).toEqual(['UNSUPPORTED_ATTACHMENT', ATTACHMENT_ERROR_STATUS.UNSUPPORTED_ATTACHMENT]);
      expect(err.details, name).toMatchObject({ file_name: name, attachment_index: 1 });
    }
  });

  it('reads a PDF by its content whatever its name', async () => {
    const out = await readAttachments({ attachments: [file('download', makePdf(['A PDF without an extension in its name.']))] }, NO_TRANSCRIPTION);
    expect(out.attachment_texts).toEqual(['A PDF without an extension in its name.']);
  });
});

// ------------------------------------------------------------------ images and scans

describe('readAttachments: images and scanned pages', () => {
  const png = makePng('HELLO WORLD');

  it('422 for an image when the plan does not allow transcription, even with a model configured', async () => {
    const model = vi.fn(async () => 'never');
    const err = await rejection(readAttachments({ attachments: [file('photo.png', png)] }, { transcriptionAllowed: false, transcribeWithModel: model, ocr: fakeOcr() }));
    expect([err.code, err.status]).toEqual(['ATTACHMENT_UNREADABLE', 422]);
    expect(err.message).toMatch(/not available on this plan/);
    expect(err.details).toMatchObject({ file_name: 'photo.png', reason: 'transcription_not_allowed' });
    expect(model).not.toHaveBeenCalled();
  });

  it('422 for an image when allowed but neither a model nor OCR is available', async () => {
    const err = await rejection(readAttachments({ attachments: [file('photo.png', png)] }, { transcriptionAllowed: true, transcribeWithModel: null, ocr: null }));
    expect([err.code, err.status]).toEqual(['ATTACHMENT_UNREADABLE', 422]);
    expect(err.message).toMatch(/not configured/);
    expect(err.details).toMatchObject({ reason: 'transcription_not_configured' });
  });

  it('transcribes an image with the model when configured (before OCR)', async () => {
    const model = vi.fn(async (_image: { bytes: Uint8Array; mimeType: string; fileName: string }) => '  Invoice 42\r\nTotal: 10 EUR  ');
    const ocr = fakeOcr();
    const out = await readAttachments({ attachments: [file('scan.jpg', Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64)]))] }, { transcriptionAllowed: true, transcribeWithModel: model, ocr });
    expect(model).toHaveBeenCalledOnce();
    expect(model.mock.calls[0][0]).toMatchObject({ mimeType: 'image/jpeg', fileName: 'scan.jpg' });
    expect(ocr).not.toHaveBeenCalled();
    const [entry] = out.attachments as Record<string, unknown>[];
    expect(entry).toMatchObject({ file_name: 'scan.jpg', format: 'image', pages: null, text: 'Invoice 42\nTotal: 10 EUR' });
    expect((entry.warnings as string[])[0]).toMatch(/vision model/);
    expect(out.attachments_text).toBe('## File: scan.jpg\n\nInvoice 42\nTotal: 10 EUR');
  });

  it('passes a model error on as it is', async () => {
    const failure = new AppError('LLM_PROVIDER_ERROR', 'provider down');
    const err = await rejection(readAttachments({ attachments: [file('a.png', png)] }, { transcriptionAllowed: true, transcribeWithModel: async () => Promise.reject(failure), ocr: null }));
    expect(err).toBe(failure);
  });

  it('falls back to the injected OCR without a model; sniffs GIF and WebP; an OCR failure is a 422', async () => {
    const ocr = fakeOcr('read by ocr');
    const gif = Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(16)]);
    const webp = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 '), Buffer.alloc(16)]);
    const out = await readAttachments({ attachments: [file('a.gif', gif), file('b.webp', webp), file('empty.png', png)] }, { transcriptionAllowed: true, transcribeWithModel: null, ocr });
    expect(ocr.mock.calls.map(([image]) => image.mimeType)).toEqual(['image/gif', 'image/webp', 'image/png']);
    expect(out.attachment_texts).toEqual(['read by ocr', 'read by ocr', 'read by ocr']);
    expect((out.attachments as Record<string, string[]>[])[0].warnings[0]).toMatch(/OCR/);

    const blank = await readAttachments({ attachments: [file('blank.png', png)] }, { transcriptionAllowed: true, transcribeWithModel: null, ocr: fakeOcr('  ') });
    expect((blank.attachments as Record<string, unknown>[])[0]).toMatchObject({ text: '', warnings: [expect.stringMatching(/OCR/), 'No text was found in the image'] });

    const err = await rejection(readAttachments({ attachments: [file('bad.png', png)] }, { transcriptionAllowed: true, transcribeWithModel: null, ocr: () => Promise.reject(new Error('cannot read')) }));
    expect([err.code, err.status, err.message]).toEqual(['ATTACHMENT_UNREADABLE', 422, 'Attachment "bad.png": OCR could not read the image: cannot read']);
  });

  it('a scanned PDF: 422 without transcription; transcribed page images with it', async () => {
    const scan = makeMixedPdf([{ scan: 'HELLO WORLD' }]);
    const refused = await rejection(readAttachments({ attachments: [file('scan.pdf', scan)] }, NO_TRANSCRIPTION));
    expect([refused.code, refused.status]).toEqual(['ATTACHMENT_UNREADABLE', 422]);
    expect(refused.message).toMatch(/no text layer.*not available on this plan/);

    const model = vi.fn(async (_image: { bytes: Uint8Array; mimeType: string; fileName: string }) => 'page one by the model');
    const out = await readAttachments({ attachments: [file('scan.pdf', scan)] }, { transcriptionAllowed: true, transcribeWithModel: model, ocr: null });
    expect(model).toHaveBeenCalledOnce();
    const image = model.mock.calls[0][0];
    expect(image).toMatchObject({ mimeType: 'image/png', fileName: 'scan.pdf (page 1)' });
    expect([...image.bytes.subarray(1, 4)]).toEqual([...Buffer.from('PNG')]);
    expect((out.attachments as Record<string, unknown>[])[0]).toMatchObject({ format: 'pdf', pages: 1, text: 'page one by the model', warnings: [expect.stringMatching(/Page 1 has no text layer.*vision model/)] });
  });

  it('a PDF with text and scanned pages: a warning without transcription, both texts with it', async () => {
    const mixed = makeMixedPdf([{ text: 'The typed first page of the contract.' }, { scan: 'HELLO WORLD' }]);
    const partial = await readAttachments({ attachments: [file('contract.pdf', mixed)] }, NO_TRANSCRIPTION);
    expect((partial.attachments as Record<string, unknown>[])[0]).toMatchObject({
      pages: 2,
      text: 'The typed first page of the contract.',
      warnings: [expect.stringMatching(/^Page 2 has no text layer and was not transcribed: .*plan/)],
    });

    const ocr = fakeOcr('SECOND PAGE');
    const full = await readAttachments({ attachments: [file('contract.pdf', mixed)] }, { transcriptionAllowed: true, transcribeWithModel: null, ocr });
    expect(ocr).toHaveBeenCalledOnce();
    expect(full.attachment_texts).toEqual(['The typed first page of the contract.\n\nSECOND PAGE']);
  });

  describe.skipIf(!isLocalOcrInstalled())('with the real local OCR (tesseract.js)', () => {
    it('reads the text of a PNG and of a scanned PDF page', async () => {
      const options: AttachmentReadOptions = { transcriptionAllowed: true, transcribeWithModel: null };
      const out = await readAttachments({ attachments: [file('hello.png', png), file('scan.pdf', makeMixedPdf([{ text: 'Cover page with typed text.' }, { scan: 'HELLO WORLD' }]))] }, options);
      expect(out.attachment_texts).toEqual(['HELLO WORLD', 'Cover page with typed text.\n\nHELLO WORLD']);

      const err = await rejection(readAttachments({ attachments: [file('truncated.png', png.subarray(0, 100))] }, options));
      expect([err.code, err.status]).toEqual(['ATTACHMENT_UNREADABLE', 422]);
      expect(err.message).toMatch(/OCR could not read the image/);
    });
  });
});
