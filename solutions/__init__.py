"""Worked solutions, one chNN.py per chapter, with their reasoning: `solutions/` in the repository, and the
package agentkit.solutions once installed, so agentkit.exercises.show_solution finds them on Colab too."""
