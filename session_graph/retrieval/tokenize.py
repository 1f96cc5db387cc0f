"""Terms for retrieval: words with light English stemming, CJK characters and bigrams, dates.

One tokenizer serves every index (the JSONL index, SQLite FTS5, Postgres ``tsvector``, the
in-memory index of a session) and every query, so a term found in a message is the term a
question asks for. Its output is plain alphanumeric tokens (no punctuation), so the
databases' own tokenizers split them exactly where we did.

- Words are NFKC-normalised and case-folded; English words get a light suffix stripper
  (``moved``, ``moves``, ``moving`` -> ``mov``; ``cities`` and ``city`` -> ``citi``);
  stop words (including question words: what, when, did...) are dropped.
- Runs of CJK characters give every character (except particles such as 的, 了) and every
  pair of neighbours: Chinese and Japanese have no spaces, and a question rarely repeats
  the exact bigrams of the answer.
- Dates in common forms (``2024-03-15``, ``March 15, 2024``, ``15 March``, ``3/15/2024``,
  ``2024年3月15日``) give their year, the month's name and a month-day token (``d0315``),
  so "what happened on March 15" meets "on 2024-03-15".

``TOKENIZER`` names this version; a persisted index made by another version is rebuilt.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["TOKENIZER", "is_cjk", "query_terms", "stem", "terms"]

TOKENIZER = "sg-terms-1"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_MONTH_OF = {name: i + 1 for i, name in enumerate(_MONTHS)}
_MONTH_OF.update({name[:3]: i + 1 for i, name in enumerate(_MONTHS)})
_MONTH_OF.update({"sept": 9})
_ABBREVIATION = {k: _MONTHS[v - 1] for k, v in _MONTH_OF.items() if k not in _MONTHS and k not in ("mar", "jan")}
_MONTH_RE = "|".join(sorted(_MONTH_OF, key=len, reverse=True))
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})")
_NAMED = re.compile(rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?")
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b\.?(?:,?\s+(\d{{4}}))?")
_ANY_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")  # every month name starts so
_SLASHED = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_CJK_DATE = re.compile(r"(?:(\d{4})年)?(\d{1,2})月(?:(\d{1,2})[日号])?")

_STOP = frozenset(["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "couldn", "did", "didn", "do", "does", "doesn", "doing", "don", "down", "during", "each", "few", "for", "from", "further", "had", "hadn", "has", "hasn", "have", "haven", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "isn", "it", "its", "itself", "just", "let", "ll", "me", "mine", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "re", "s", "same", "she", "should", "so", "some", "such", "t", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "wasn", "we", "were", "weren", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "won", "would", "wouldn", "you", "your", "yours", "yourself", "yourselves", "ve", "d", "m", "o", "y", "tell", "remind", "recall", "remember", "know", "said", "say", "says", "told", "ask", "asked", "mention", "mentioned", "again", "ever", "also", "still", "yes", "ok", "okay", "oh", "hi", "hey", "please", "thanks", "thank"])
_CJK_STOP = frozenset("的了是在和吗呢吧啊也就都而及与着或个这那么什我你他她它们有没不很还要会说")


def is_cjk(ch: str) -> bool:
    """Whether a character is written without spaces between words (Han, kana, Hangul)."""
    code = ord(ch)
    return (0x3040 <= code <= 0x30FF or 0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF
            or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x2FA1F)


_VOWELS = frozenset("aeiouy")


def _undouble(word: str) -> str:
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeioulsz":
        return word[:-1]
    return word


def stem(word: str) -> str:
    """A light English suffix stripper (ASCII letters only; anything else is returned as is).

    Not Porter: it only conflates the forms a question and its answer usually differ by
    (plurals, -ed/-ing, -ly, -ment, -ness, -ation, y/i, a final e), and it is the same for
    documents and queries, which is what matters for matching.
    """
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "i"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        word = word[:-1]
    for suffix in ("ingly", "edly", "ing", "ed"):
        if word.endswith(suffix):
            rest = word[: -len(suffix)]
            if len(rest) >= 3 and any(ch in _VOWELS for ch in rest):
                word = _undouble(rest)
            break
    for suffix, keep, replace in (("ation", 3, "ate"), ("ment", 4, ""), ("ness", 3, ""), ("fully", 3, ""),
                                  ("ful", 4, ""), ("ly", 5, "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= keep:
            word = word[: -len(suffix)] + replace
            break
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "i"
    if len(word) > 2 and word.endswith("y") and word[-2] not in _VOWELS:
        word = word[:-1] + "i"
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _dates(text: str) -> list[str]:
    out: list[str] = []

    def emit(year: str | None, month: int, day: str | None) -> None:
        if not 1 <= month <= 12:
            return
        out.append(_MONTHS[month - 1])
        if year:
            out.append(year)
        if day and 1 <= int(day) <= 31:
            out.append(f"d{month:02d}{int(day):02d}")

    # each form is looked for only where its separator occurs (a scan of the text in C each)
    for year, month, day in _ISO.findall(text) if "-" in text else ():
        emit(year, int(month), day)
    named = _ANY_MONTH.search(text) is not None
    for month, day, year in _NAMED.findall(text) if named else ():
        emit(year or None, _MONTH_OF[month], day)
    for day, month, year in _DAY_FIRST.findall(text) if named else ():
        emit(year or None, _MONTH_OF[month], day)
    for month, day, year in _SLASHED.findall(text) if "/" in text else ():
        emit(year, int(month), day)
    for year, month, day in _CJK_DATE.findall(text) if "月" in text else ():
        emit(year or None, int(month), day or None)
    return out


def _cjk(run: str, out: list[str]) -> None:
    out.extend(ch for ch in run if ch not in _CJK_STOP)
    out.extend(run[i : i + 2] for i in range(len(run) - 1))


def _ascii_term(word: str) -> str:
    """The term of an ASCII word ("" when it is dropped)."""
    if word in _STOP or (len(word) == 1 and not word.isdigit()):
        return ""
    if word.isdigit():
        return word.lstrip("0") or "0"
    return stem(_ABBREVIATION.get(word, word))


_KNOWN: dict[str, str] = {}  # ASCII word -> its term: a conversation repeats its words, each stemmed once
_KNOWN_MAX = 20_000  # then it starts over (bounded: about 2 MB, as only words up to _KNOWN_LONGEST are kept)
_KNOWN_LONGEST = 40  # a longer word (a sequence, a hex dump, an encoded blob) is stemmed each time, never kept
_DIGIT = re.compile(r"\d")


def terms(text: str) -> list[str]:
    """The terms of a text, in order, repeated as often as they occur (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    out = [stem(t) for t in _dates(text)] if _DIGIT.search(text) else []
    known = _KNOWN
    for word in _WORD.findall(text):
        term = known.get(word)
        if term is not None:
            if term:
                out.append(term)
            continue
        if word.isascii():
            term = _ascii_term(word)
            if len(word) <= _KNOWN_LONGEST:
                if len(known) >= _KNOWN_MAX:
                    known.clear()
                known[word] = term
            if term:
                out.append(term)
            continue
        if not any(is_cjk(ch) for ch in word):
            out.append(word)  # other scripts: the word as written (case-folded)
            continue
        run, plain = "", ""
        for ch in (*word, " "):
            if is_cjk(ch):
                if plain:
                    out.append(stem(plain) if plain.isascii() else plain)
                    plain = ""
                run += ch
                continue
            if run:
                _cjk(run, out)
                run = ""
            if ch != " ":
                plain += ch
        if plain:
            out.append(stem(plain) if plain.isascii() else plain)
    return out


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in order of first appearance."""
    return list(dict.fromkeys(terms(text)))
