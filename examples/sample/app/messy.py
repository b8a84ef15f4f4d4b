import sys
x=1
print(sys.argv, x)
