import matplotlib.pyplot as plt  # builds its font cache in a fresh HOME: runs fc-list
