"""Generate ``examples/lighthouse-manual.pdf``: a small multi-page PDF that exercises the PDF loader.

It has what real reports have and naive extractors get wrong: a running header and a "Page N of M" footer
on every page, an outline (bookmarks) with nested chapters, paragraphs that continue across a page break,
a word hyphenated across a line break, and line-wrapped paragraphs. The tests check that every chunk gets
the right pages and section and that no header or footer text survives cleaning.

Run: ``python scripts/make_example_pdf.py [OUTPUT]`` (needs fpdf2: ``pip install 'chunkwise[pdfgen]'``).
The output is deterministic (fixed creation date), so regenerating it does not change the committed file.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF

TITLE = "Harbor Lighthouse Maintenance Manual"
HEADER = f"{TITLE} - Revision 3"

#: (level, heading, paragraphs); a paragraph given as a list of lines is written with those exact line
#: breaks (to place a hyphenated word at a line end), a string is wrapped by fpdf2.
CHAPTERS = [
    (
        0,
        "1 Introduction",
        [
            "This manual describes the routine care of the harbor lighthouse at North Point. The keeper on duty "
            "follows it every week, and the relief keeper uses it to check what was done. Each chapter names the "
            "tools, the order of the work and the entries that belong in the log book.",
            "The light has guided fishing boats into the harbor since the old signal fire was replaced by a lamp "
            "and lens. Most of the work is simple, but skipping a step lets salt and soot build up until the beam "
            "grows dim and the ships lose sight of the rocks.",
        ],
    ),
    (
        0,
        "2 Lamp and Lens",
        [
            "The lamp room sits at the top of the tower, behind a gallery exposed to wind and spray. Everything in "
            "this chapter happens there, so carry the tools up in one trip and keep the hatch closed while you "
            "work.",
        ],
    ),
    (
        1,
        "2.1 Cleaning the Lens",
        [
            "Clean the lens every morning after the light is switched off. Use a soft linen cloth and distilled "
            "water only; household cleaners leave a film that scatters the beam. Work from the centre panel "
            "outwards and never press on the prisms.",
            [
                "Once a month, polish the brass frame and check the seals for salt crust.",
                "Record the condition of each panel in the log, and report any chip or crack to the harbor main-",
                "tenance office the same day so a spare panel can be ordered before the winter storms.",
            ],
            "On foggy days the lens collects moisture on the inside as well. Open the vents for ten minutes before "
            "cleaning so the glass can dry, otherwise the cloth only moves the droplets around and leaves streaks "
            "that are visible from the sea.",
        ],
    ),
    (
        1,
        "2.2 Replacing the Lamp",
        [
            "The lamp is replaced after four thousand hours of service or at the first sign of flicker. Switch the "
            "circuit off at the panel on the landing, wait until the old lamp has cooled, and wear cotton gloves so "
            "that no oil from your skin reaches the new bulb.",
            "Write the date, the serial number of the new lamp and the hour counter in the log book. The spare "
            "lamps are kept in the locked cabinet on the second landing; there should always be two of them.",
        ],
    ),
    (
        0,
        "3 Tower Structure",
        [
            "Walk the stairs from the base to the gallery once a week and look for rust stains, loose rails and "
            "cracks in the plaster. Rust stains below a bolt mean water is getting in and the bolt must be treated "
            "before the spring inspection.",
            "The gallery railing carries the full force of the winter gales. Check every post by hand, tighten the "
            "clamps that move and paint bare spots with the grey primer kept in the store room. Never lean on the "
            "railing while you test it, and wear the harness when the wind is strong.",
            "The door at the base of the tower swells in damp weather. Plane it only in summer, when the wood is "
            "dry, and oil the hinges at the same time.",
        ],
    ),
    (
        0,
        "4 Log Book and Reports",
        [
            "Every task in this manual ends with an entry in the log book: the date, the keeper's initials, what "
            "was done and anything unusual that was seen. The log is the only record the harbor office receives, "
            "so write clearly and do not leave gaps.",
            "At the end of each month, copy the totals for lamp hours, fuel and spare parts onto the monthly "
            "report form and send it to the harbor office with the supply boat.",
        ],
    ),
]


class ManualPDF(FPDF):
    def header(self) -> None:
        self.set_font("Helvetica", "I", 9)
        self.cell(0, 8, HEADER, align="C", new_x="LMARGIN", new_y="NEXT")
        self.ln(4)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("Helvetica", "", 9)
        self.cell(0, 10, f"Page {self.page_no()} of {{nb}}", align="C")


def build(path: Path) -> None:
    pdf = ManualPDF(format=(110, 160))
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))
    pdf.set_title(TITLE)
    pdf.set_author("chunkwise examples")
    pdf.alias_nb_pages()
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.multi_cell(0, 9, TITLE, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    for level, heading, paragraphs in CHAPTERS:
        if level == 0 and heading != CHAPTERS[0][1]:
            pdf.ln(4)
        pdf.start_section(heading, level=level)
        pdf.set_font("Helvetica", "B", 13 if level == 0 else 11)
        pdf.multi_cell(0, 7, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(1)
        pdf.set_font("Helvetica", "", 10)
        for para in paragraphs:
            text = "\n".join(para) if isinstance(para, list) else para
            pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))


if __name__ == "__main__":
    out = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[1] / "examples" / "lighthouse-manual.pdf"
    )
    build(out)
    print(f"wrote {out} ({out.stat().st_size} bytes)")
