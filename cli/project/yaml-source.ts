// One YAML file with positions: parsed once, its syntax errors at their line and column, and the
// line of any value inside it found by its path (for schema errors and the server's issues).
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';

export interface Position {
  line: number;
  column: number;
}

export interface YamlSource {
  file: string;
  doc: Document;
  lines: LineCounter;
  /** Syntax errors, with where each starts. */
  errors: { position: Position; message: string }[];
}

export function parseYaml(file: string, text: string): YamlSource {
  const lines = new LineCounter();
  // Duplicate keys are errors (uniqueKeys), and a file holds one document.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  const errors = doc.errors.map((err) => {
    const [start] = err.linePos ?? [{ line: 1, col: 1 }];
    // yaml appends a picture of the line under the message: keep the sentence.
    const message = err.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
    return { position: { line: start.line, column: start.col }, message };
  });
  return { file, doc, lines, errors };
}

const at = (source: YamlSource, offset: number): Position => {
  const { line, col } = source.lines.linePos(offset);
  return { line, column: col };
};

/**
 * Where the value at `path` is written, or its key when `key` is set (an unknown field); as deep as
 * the document goes when the path leads somewhere it has no node (a missing field: its parent).
 */
export function positionOf(source: YamlSource, path: (string | number)[], options: { key?: boolean } = {}): Position {
  let node: Node | null | undefined = source.doc.contents as Node | null;
  let position: Position = node?.range ? at(source, node.range[0]) : { line: 1, column: 1 };
  for (let i = 0; i < path.length && node; i++) {
    if (isAlias(node)) node = node.resolve(source.doc) as Node | undefined;
    const segment = path[i];
    let next: Node | null | undefined;
    let keyNode: Node | null | undefined;
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(segment));
      keyNode = pair?.key as Node | null | undefined;
      next = pair?.value as Node | null | undefined;
      if (pair && !next && keyNode?.range) return at(source, keyNode.range[0]); // `field:` with no value
    } else if (isSeq(node)) {
      const index = Number(segment);
      next = Number.isInteger(index) ? (node.items[index] as Node | null | undefined) : undefined;
    }
    if (!next && !keyNode) break;
    const last = i === path.length - 1;
    const target = last && options.key && keyNode ? keyNode : (next ?? keyNode);
    if (target?.range) position = at(source, target.range[0]);
    node = next;
  }
  return position;
}

/** `/steps/2/config` (a JSON Pointer, as ajv reports) as path segments. */
export const pointerPath = (pointer: string): string[] =>
  pointer === '' ? [] : pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
