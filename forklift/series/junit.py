"""JUnit XML for CI systems: one test case per patch and pass, per overlay file, and per other check;
a skipped series entry is a skipped test case carrying its reason."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from forklift.series.check import CheckReport

OTHER_CHECKS = ("whitespace", "compile", "deletes", "patches-md", "nothing-changed", "manifest", "digests")


def junit_xml(report: CheckReport) -> str:
    suite = ET.Element("testsuite", name="forklift check")
    cases = [("pass1", row.name) for row in report.pass1] + [("pass2", row.name) for row in report.pass2]
    cases += [("overlay", row.path) for row in report.overlay_files]
    for check in OTHER_CHECKS:
        subjects = [f.subject for f in report.findings if f.check == check] or ["all"]
        cases += [(check, subject) for subject in dict.fromkeys(subjects)]
    for check, subject in cases:
        case = ET.SubElement(suite, "testcase", classname=f"forklift.{check}", name=subject)
        messages = [f.message for f in report.findings if f.check == check and f.subject == subject]
        if messages:
            ET.SubElement(case, "failure", message=messages[0]).text = "\n".join(messages)
    for skip in report.skipped:
        case = ET.SubElement(suite, "testcase", classname="forklift.pass1", name=skip.name)
        ET.SubElement(case, "skipped", message=f"skipped: {skip.reason}")
    suite.set("tests", str(len(cases) + len(report.skipped)))
    suite.set("failures", str(sum(1 for c in suite if c.find("failure") is not None)))
    suite.set("skipped", str(len(report.skipped)))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
