# Never imports torch: runs exactly as without amptrace.
import sys
print("hello", sys.argv[1:])
sys.exit(3)
