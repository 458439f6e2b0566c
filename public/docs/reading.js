/*
 * A Swagger UI plugin (in the browser) that keeps an expanded operation short: its own answers first,
 * the shared ones (a `$ref` to components/responses) a line each; headers every answer carries named
 * in a line, not tabled; code samples folded; the document linked as `/openapi.json`, where it is
 * published (the page loads it from /docs/json).
 */
(function () {
  'use strict'
  const SHARED = '#/components/responses/'
  const EVERY_ANSWER = ['X-Request-Id', 'RateLimit', 'RateLimit-Policy']
  function sharedName (system, specPath) {
    if (!specPath || typeof specPath.toArray !== 'function') return null
    const raw = system.specSelectors.specJson().getIn(specPath.toArray())
    const ref = raw && typeof raw.get === 'function' ? raw.get('$ref') : undefined
    return typeof ref === 'string' && ref.indexOf(SHARED) === 0 ? ref.slice(SHARED.length) : null
  }
  window.PetstoreDocs = window.PetstoreDocs || {}
  window.PetstoreDocs.reading = function (system) {
    // The headers every own answer of the expanded operation carries, from its responses to their header tables.
    const OperationWide = system.React.createContext([])
    return {
      wrapComponents: {
        InfoUrl: function (Original, system) {
          return function DocumentUrl (props) {
            return system.React.createElement(Original, Object.assign({}, props, { url: '/openapi.json' }))
          }
        },
        responses: function (Original, system) {
          return function OwnAnswersFirst (props) {
            const responses = props.responses
            if (!responses || typeof responses.filter !== 'function' || !props.specPath) return system.React.createElement(Original, props)
            const isShared = function (r, code) { return sharedName(system, props.specPath.push(code)) !== null }
            const own = responses.filterNot(isShared)
            const names = function (r) { return r && r.get && r.get('headers') ? r.get('headers').keySeq().toArray() : [] }
            const first = own.first()
            const wide = names(first).filter(function (h) {
              return EVERY_ANSWER.indexOf(h) === -1 && own.every(function (r) { return names(r).indexOf(h) !== -1 })
            })
            const ordered = own.concat(responses.filter(isShared))
            return system.React.createElement(OperationWide.Provider, { value: own.size > 1 ? wide : [] },
              system.React.createElement(Original, Object.assign({}, props, { responses: ordered })))
          }
        },
        response: function (Original, system) {
          return function SharedAnswerInOneLine (props) {
            const React = system.React
            const opened = React.useState(false)
            const name = sharedName(system, props.specPath)
            if (name === null || opened[0]) return React.createElement(Original, props)
            const response = props.response
            const description = (response && response.get('description')) || name
            const headers = response && response.get('headers') ? response.get('headers').keySeq().toArray() : []
            const Markdown = props.getComponent('Markdown', true)
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
            const React = system.React
            const headers = props.headers
            if (!headers || typeof headers.filter !== 'function') return React.createElement(Original, props)
            const wide = React.useContext(OperationWide)
            const common = function (h, name) { return EVERY_ANSWER.indexOf(name) !== -1 || wide.indexOf(name) !== -1 }
            const carried = headers.filter(common).keySeq().toArray()
            if (carried.length === 0) return React.createElement(Original, props)
            const own = headers.filterNot(common)
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
            const React = system.React
            const pathMethod = props.pathMethod
            const samples = pathMethod ? system.specSelectors.specJson().getIn(['paths', pathMethod[0], pathMethod[1], 'x-codeSamples']) : null
            if (!samples || !samples.size) return React.createElement(Original, props)
            const HighlightCode = props.getComponent('HighlightCode', true)
            const labels = samples.map(function (s) { return s.get('label') }).toArray()
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
