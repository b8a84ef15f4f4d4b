; Ruby symbols for the lsp-hub index. Capture conventions are documented in lsp_hub/index/extract.py.

; --- definitions -------------------------------------------------------------------------------------------

(class
  name: [
    (constant) @name
    (scope_resolution name: (_) @name)
  ]) @definition.class

(module
  name: [
    (constant) @name
    (scope_resolution name: (_) @name)
  ]) @definition.module

; A def inside a class becomes a method; one directly inside a module is a method too (mixins).
(method
  name: (_) @name) @definition.function

(module
  body: (body_statement
    [
      (method name: (_) @name)
      (singleton_method name: (_) @name)
    ] @definition.method))

(singleton_method
  name: (_) @name) @definition.function

(assignment
  left: (constant) @name) @definition.constant

; `attr_reader :name, :size`: a method for each symbol (the extractor drops the colon). They were missing from
; outlines, and `request.env` had no definition to go to.
(call
  !receiver
  method: (identifier) @_attr
  arguments: (argument_list
    (simple_symbol) @name @definition.method)
  (#match? @_attr "^attr_(reader|writer|accessor)$"))

; --- references --------------------------------------------------------------------------------------------

(call
  !receiver
  method: (identifier) @name) @reference.call

(call
  receiver: (_) @receiver
  method: (identifier) @name) @reference.call

; A method named like a constant, called on a receiver: rack's `self.GET.merge(self.POST)`.
(call
  receiver: (_) @receiver
  method: (constant) @name) @reference.call

; A bare identifier that is no local variable is a call too: the extractor tells them apart (ruby_bare_calls.py).

(superclass
  [
    (constant) @name
    (scope_resolution scope: (_) @receiver name: (constant) @name)
  ] @reference.class)

(call
  receiver: (constant) @name
  method: (identifier) @_new
  (#eq? @_new "new")) @reference.class

; --- imports -----------------------------------------------------------------------------------------------

(call
  !receiver
  method: (identifier) @_require
  arguments: (argument_list
    .
    (string
      (string_content) @import.module))
  (#any-of? @_require "require" "load")) @import

; `autoload :Builder, "rack/builder"`: the file is loaded when the constant is first used (rack's own modules).
(call
  !receiver
  method: (identifier) @_autoload
  arguments: (argument_list
    (simple_symbol)
    (string
      (string_content) @import.module))
  (#eq? @_autoload "autoload")) @import

(call
  !receiver
  method: (identifier) @import.relative
  arguments: (argument_list
    .
    (string
      (string_content) @import.module))
  (#eq? @import.relative "require_relative")) @import

; --- tests ---------------------------------------------------------------------------------------------------
; RSpec's and minitest/spec's `it "adds" do ... end`, `describe "cart" do`, `context`, `specify`: a function named
; `it("adds")`, the caller of what its block calls (they were "(top level)"); `before do ... end` and
; `before(:each) { ... }` are named `before()`. `describe Cart do` names no test: its tests are named inside it.
(call
  method: (identifier) @test.callee
  arguments: (argument_list
    .
    (string) @test.title)
  block: [(do_block) (block)] @test.body
  (#match? @test.callee "^(describe|context|it|specify|scenario|feature|test)$")) @test

(call
  method: (identifier) @test.callee
  block: [(do_block) (block)] @test.body
  (#match? @test.callee "^(before|after|around)$")) @test

; A one-liner without a description (`it { is_expected.to be_empty }`, `specify { ... }`): named `it()`.
(call
  method: (identifier) @test.callee
  !arguments
  block: [(do_block) (block)] @test.body
  (#match? @test.callee "^(it|specify)$")) @test
