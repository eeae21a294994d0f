"""Random Markdown documents from fragments that exercise marked's block and inline rules.
Usage: marked_cases_gen.py SEED COUNT > in.json (see marked_oracle.mjs)."""
import json, random, sys
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
frags = [
 "para @a.md text", "see @b.md and @c.md", "@start.md", "  @indented2.md", "    @code4.md", "\t@tab.md",
 "<!-- comment -->", "<!-- c --> after @res.md", "<!--\nmulti\n-->", "<!-- unclosed", "text <!-- inline --> @x.md",
 "```", "```js", "~~~", "- item @li.md", "* star @st.md", "+ plus", "1. one @o.md", "2) two", "  - nested @n.md",
 "> quote @q.md", ">> deep @dq.md", "> - list in quote @lq.md", "# head @h.md", "## h2 ##", "Setext", "===", "---", "***", "___",
 "[ref]: http://x.com", "[ref]", "[link @lt.md](http://y)", "![img @im.md](i.png)", "`code @cs.md`", "``double ` tick @dt.md``",
 "**bold**@bd.md", "*em* @em.md", "_under_@u.md", "__strong__", "a*b*c @abc.md", "\\_esc@esc.md", "\\*not em*",
 "<div>", "</div>", "<div>\n@in-div.md\n</div>", "<span>@sp.md</span>", "<a href=\"x\">@ina.md</a>", "<script>\n@scr.md\n</script>",
 "<https://auto.link/@al.md>", "<me@mail.com>", "line with trailing  ", "line with backslash\\", "", "", "", "   ",
 "user@example.com", "(@paren.md)", "@with\\ space.md", "@f.md#frag", "@../up.md", "@~/home.md", "@/abs/p.md",
 "é @ü.md 😀", "@@double.md", "@#hash.md", "tab\t@t2.md", "\u00a0@nbsp.md", "- [ ] task @task.md", "10. ten",
 "<!-- a --><!-- b -->", "x\r\n@crlf.md", "<?php x ?>", "<![CDATA[ @cd.md ]]>", "<!DOCTYPE html>", "- a\n\n  b @loose.md",
 "> a\nlazy @lazy.md", "> - a\n> - b @qb.md\nlazy2 @lz2.md", "> > nested @nn.md\n> back @bk.md", "- a\n  > q @lq2.md\n- b", "1. x\n   ```\n   code @c.md\n   ```", "-\tтаб @tab2.md", "- \n  after blank @ab.md", "  * two-space @ts.md", "     - five @five.md", "- a\n    - deep @deep.md\n  - mid @mid.md", ">     code in quote @cq.md", "> ```\n> @fq.md\n> ```", "- # heading in item @hi.md", "- <!-- c -->\n  @after.md", "Title\n---\n@afterset.md", "> Title\n> ===", "<!-- x -->text @tx.md", "   <!-- indented3 -->", "\t<!-- tab -->", "- a\nlazy @lz.md", "***bold em***@be.md", "[ref][ref] @r2.md", "[unknown][] @u2.md",
]
docs = []
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 500):
    n = random.randint(1, 12)
    parts = [random.choice(frags) for _ in range(n)]
    sep = [random.choice(["\n", "\n\n", "\n", " "]) for _ in range(n)]
    doc = "".join(p + s for p, s in zip(parts, sep))
    docs.append(doc)
json.dump(docs, sys.stdout)
