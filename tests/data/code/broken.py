def fine():
    return 1


def broken(:
    return 2


def after():
    return 3
