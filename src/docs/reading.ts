/**
 * A Swagger UI plugin, run in the reader's browser, that keeps an expanded operation short:
 *
 * - its own answers first, then the answers operations share (a `$ref` to components/responses in
 *   the document): each of those in one line (status, description, the names of its headers), the
 *   full description with its header table one click away;
 * - in the header table of its own answers, the headers every answer carries (X-Request-Id, RateLimit,
 *   RateLimit-Policy: the document's description says what they are) and those every own answer of
 *   the operation carries (getPet's Deprecation, Sunset, Link: its description says what they are)
 *   named in a line under it;
 * - its code samples (`x-codeSamples`: curl, the TypeScript client, fetch) folded above the parameters;
 * - the document linked under the title as `/openapi.json`, the address it is published at (the
 *   page itself loads the same document from /docs/json).
 */
export const READING_JS = `(function () {
  'use strict'
  var SHARED = '#/components/responses/'
  var EVERY_ANSWER = ['X-Request-Id', 'RateLimit', 'RateLimit-Policy']
  function sharedName (system, specPath) {
    if (!specPath || typeof specPath.toArray !== 'function') return null
    var raw = system.specSelectors.specJson().getIn(specPath.toArray())
    var ref = raw && typeof raw.get === 'function' ? raw.get('$ref') : undefined
    return typeof ref === 'string' && ref.indexOf(SHARED) === 0 ? ref.slice(SHARED.length) : null
  }
  window.PetstoreDocs = window.PetstoreDocs || {}
  window.PetstoreDocs.reading = function (system) {
    // The headers every own answer of the expanded operation carries, from its responses to their header tables.
    var OperationWide = system.React.createContext([])
    return {
      wrapComponents: {
        InfoUrl: function (Original, system) {
          return function DocumentUrl (props) {
            return system.React.createElement(Original, Object.assign({}, props, { url: '/openapi.json' }))
          }
        },
        responses: function (Original, system) {
          return function OwnAnswersFirst (props) {
            var responses = props.responses
            if (!responses || typeof responses.filter !== 'function' || !props.specPath) return system.React.createElement(Original, props)
            var isShared = function (r, code) { return sharedName(system, props.specPath.push(code)) !== null }
            var own = responses.filterNot(isShared)
            var names = function (r) { return r && r.get && r.get('headers') ? r.get('headers').keySeq().toArray() : [] }
            var first = own.first()
            var wide = names(first).filter(function (h) {
              return EVERY_ANSWER.indexOf(h) === -1 && own.every(function (r) { return names(r).indexOf(h) !== -1 })
            })
            var ordered = own.concat(responses.filter(isShared))
            return system.React.createElement(OperationWide.Provider, { value: own.size > 1 ? wide : [] },
              system.React.createElement(Original, Object.assign({}, props, { responses: ordered })))
          }
        },
        response: function (Original, system) {
          return function SharedAnswerInOneLine (props) {
            var React = system.React
            var opened = React.useState(false)
            var name = sharedName(system, props.specPath)
            if (name === null || opened[0]) return React.createElement(Original, props)
            var response = props.response
            var description = (response && response.get('description')) || name
            var headers = response && response.get('headers') ? response.get('headers').keySeq().toArray() : []
            var Markdown = props.getComponent('Markdown', true)
            return React.createElement('tr', { className: 'response petstore-shared', 'data-code': props.code },
              React.createElement('td', { className: 'response-col_status' }, props.code),
              React.createElement('td', { className: 'response-col_description' },
                React.createElement(Markdown, { source: description }),
                React.createElement('div', { className: 'petstore-shared-headers' },
                  headers.length === 0 ? null : 'Headers: ',
                  headers.map(function (h, i) {
                    return React.createElement(React.Fragment, { key: h }, i === 0 ? null : ', ', React.createElement('code', null, h))
                  }),
                  ' ',
                  React.createElement('button', { type: 'button', className: 'petstore-shared-open', onClick: function () { opened[1](true) } }, 'details'))))
          }
        },
        headers: function (Original, system) {
          return function OwnHeadersFirst (props) {
            var React = system.React
            var headers = props.headers
            if (!headers || typeof headers.filter !== 'function') return React.createElement(Original, props)
            var wide = React.useContext(OperationWide)
            var common = function (h, name) { return EVERY_ANSWER.indexOf(name) !== -1 || wide.indexOf(name) !== -1 }
            var carried = headers.filter(common).keySeq().toArray()
            if (carried.length === 0) return React.createElement(Original, props)
            var own = headers.filterNot(common)
            return React.createElement('div', null,
              own.size === 0 ? null : React.createElement(Original, Object.assign({}, props, { headers: own })),
              React.createElement('div', { className: 'petstore-common-headers' },
                own.size === 0 ? 'Headers: ' : 'Also: ',
                carried.map(function (h, i) {
                  return React.createElement(React.Fragment, { key: h }, i === 0 ? null : ', ', React.createElement('code', null, h))
                }),
                ' (as on every answer: see above)'))
          }
        },
        parameters: function (Original, system) {
          return function WithCodeSamples (props) {
            var React = system.React
            var pathMethod = props.pathMethod
            var samples = pathMethod ? system.specSelectors.specJson().getIn(['paths', pathMethod[0], pathMethod[1], 'x-codeSamples']) : null
            if (!samples || !samples.size) return React.createElement(Original, props)
            var HighlightCode = props.getComponent('HighlightCode', true)
            var labels = samples.map(function (s) { return s.get('label') }).toArray()
            return React.createElement('div', null,
              React.createElement('details', { className: 'petstore-samples' },
                React.createElement('summary', null, 'Code samples: ' + labels.join(' · ')),
                samples.map(function (s) {
                  return React.createElement('div', { key: s.get('label'), className: 'petstore-sample' },
                    React.createElement('h5', null, s.get('label')),
                    React.createElement(HighlightCode, { language: s.get('lang') === 'Shell' ? 'bash' : 'javascript', canCopy: true }, s.get('source')))
                }).toArray()),
              React.createElement(Original, props))
          }
        }
      }
    }
  }
})()
`
