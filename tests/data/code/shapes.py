"""Shapes and their areas."""

import math

# the default unit, used by every shape
UNIT = "cm"


def area_of_circle(radius):
    """The area of a circle of ``radius``."""
    return math.pi * radius**2


class Rectangle:
    """A rectangle with a width and a height."""

    def __init__(self, width, height):
        self.width = width
        self.height = height

    # the area in square units
    def area(self):
        """Width times height."""
        return self.width * self.height

    @property
    def perimeter(self):
        return 2 * (self.width + self.height)


def describe(shapes):
    lines = []
    for shape in shapes:
        if isinstance(shape, Rectangle):
            lines.append(f"rectangle {shape.width} x {shape.height} {UNIT}")
        else:
            lines.append(f"something else: {shape!r}")
    return "\n".join(lines)
