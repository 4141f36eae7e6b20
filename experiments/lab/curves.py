"""Reading a swept curve: a list of (x, y) points sorted by x, joined by straight lines."""


def crossing(points, level):
    """The x at which the piecewise-linear y(x) of POINTS first reaches LEVEL (from above or
    below), or None where it never does."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if (y0 - level) * (y1 - level) <= 0 and y0 != y1:
            return x0 + (level - y0) * (x1 - x0) / (y1 - y0)
    return None


def interpolate(points, x):
    """y(X) on the piecewise-linear curve of POINTS, held at the end values outside them."""
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    return next(y0 + (x - x0) * (y1 - y0) / (x1 - x0)
                for (x0, y0), (x1, y1) in zip(points, points[1:]) if x0 <= x <= x1)
