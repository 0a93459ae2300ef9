"""Running a course on tinyflow: the student version of the assignments, and the autograder."""
from .grader import grade, format_report
from .student import SOURCE, make_student

__all__ = ["SOURCE", "make_student", "grade", "format_report"]
