#!/usr/bin/env python3
"""The length distribution of the Swift functions under a folder, and the longest ones.

    python3 packaging/function-lengths.py [FOLDER (default Sources)] [HOW_MANY_LONGEST (default 10)]

A function's length is its lines from the line of its `func`, `init`, `deinit` or
`subscript` keyword to its closing brace, both counted; closures and computed
properties are not functions here. Comments and string literals (interpolations
included) are skipped when braces are matched. STYLE.md's measure: median about 10
lines, rarely over 40."""
import re, sys, os, statistics

DECL = re.compile(r'(?<![\w.])(func\s+[^\s(<]+|init[?!]?\s*[(<]|deinit\b|subscript\s*[(<])')

def mask(text):
    """Returns text with comments and string contents replaced by spaces (newlines kept)."""
    out = []; i = 0; n = len(text)
    def skip_string(i, multi, raw_hashes):
        # i points just after the opening quote(s)
        close = '"""' if multi else '"'
        close += '#' * raw_hashes
        while i < n:
            if text.startswith(close, i):
                return i + len(close)
            c = text[i]
            if c == '\\' and text.startswith('#' * raw_hashes, i + 1):
                j = i + 1 + raw_hashes
                if j < n and text[j] == '(':
                    # interpolation: parse code until the matching paren
                    depth = 1; j += 1
                    while j < n and depth:
                        if text[j] == '"':
                            m = text.startswith('"""', j)
                            j = skip_string(j + (3 if m else 1), m, 0)
                            continue
                        if text[j] == '(': depth += 1
                        elif text[j] == ')': depth -= 1
                        j += 1
                    i = j; continue
                i = j + 1; continue
            i += 1
        return i
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i); j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j; continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j; continue
        m = re.match(r'(#*)("""|")', text[i:i+8])
        if m and (c == '"' or c == '#'):
            hashes = len(m.group(1)); multi = m.group(2) == '"""'
            j = skip_string(i + hashes + len(m.group(2)), multi, hashes)
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j; continue
        out.append(c); i += 1
    return ''.join(out)

def functions(path):
    text = mask(open(path, encoding='utf-8').read())
    lines = text.split('\n')
    offsets = []; pos = 0
    for line in lines:
        offsets.append(pos); pos += len(line) + 1
    import bisect
    result = []
    for m in DECL.finditer(text):
        start = m.start()
        # the body: first '{' after the signature, unless a protocol requirement (newline before '{' with no body)
        depth = 0; j = m.end(); body = None
        while j < len(text):
            ch = text[j]
            if ch in '([<': depth += 1
            elif ch in ')]>': depth -= 1 if ch != '>' or depth > 0 else 0
            elif ch == '{' and depth <= 0: body = j; break
            elif ch == '\n' and depth <= 0:
                # signature may continue on the next line (where, throws, ->)
                rest = text[j+1:].lstrip(' ')
                if not re.match(r'(where|throws|rethrows|async|->|\{|[,)&])', rest): break
            elif ch == '}' : break
            j += 1
        if body is None: continue
        d = 0; k = body
        while k < len(text):
            if text[k] == '{': d += 1
            elif text[k] == '}':
                d -= 1
                if d == 0: break
            k += 1
        first = bisect.bisect_right(offsets, start) - 1
        last = bisect.bisect_right(offsets, k) - 1
        name = m.group(1).split('(')[0].split('<')[0].strip()
        result.append((last - first + 1, path, first + 1, name))
    return result

def main(root, longest):
    allf = []
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith('.swift'): allf += functions(os.path.join(d, f))
    lengths = sorted(x[0] for x in allf)
    n = len(lengths)
    q = lambda p: lengths[min(n - 1, int(p * n))]
    print(f"functions: {n}  median: {statistics.median(lengths)}  mean: {statistics.mean(lengths):.1f}  p90: {q(0.9)}  p99: {q(0.99)}  max: {lengths[-1]}")
    buckets = [(1, 10), (11, 20), (21, 40), (41, 60), (61, 100), (101, 10**9)]
    print("  ".join(f"{a}-{b if b < 10**9 else ''}: {sum(a <= l <= b for l in lengths)}" for a, b in buckets))
    for length, path, line, name in sorted(allf, reverse=True)[:longest]:
        print(f"{length:4d}  {path}:{line}  {name}")

main(sys.argv[1] if len(sys.argv) > 1 else 'Sources', int(sys.argv[2]) if len(sys.argv) > 2 else 10)
