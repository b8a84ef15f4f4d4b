; inherits: typescript, jsx
; TSX is TypeScript plus JSX elements; everything lives in the inherited files.
