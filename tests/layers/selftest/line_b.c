/* The lower file of a line: it uses a global helper, not line_a's static. */
int helper(int n);
int line_b(int n);

int line_b(int n)
{
	return helper(n) + 1;
}
