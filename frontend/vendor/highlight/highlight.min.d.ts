// The part of highlight.js's API that markdown.js uses, for `tsc --checkJs` (the
// highlight.js CDN package ships no declarations of its own). Written for Foldline, not
// copied from the package.

export interface HighlightResult {
  /** The highlighted code as HTML (spans with `hljs-*` classes). */
  value: string;
  /** The language used (the detected one, for `highlightAuto`). */
  language?: string;
  relevance: number;
}

export interface HighlightOptions {
  language: string;
  ignoreIllegals?: boolean;
}

export interface HLJSApi {
  highlight(code: string, options: HighlightOptions): HighlightResult;
  highlightAuto(code: string, languageSubset?: string[]): HighlightResult;
  getLanguage(name: string): object | undefined;
}

declare const hljs: HLJSApi;
export default hljs;
