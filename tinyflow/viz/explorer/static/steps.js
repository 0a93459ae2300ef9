// Previous / Next of the backprop-steps pages (BackpropSteps.to_html): shows step i+d of the frames in element `id`
function tfStep(id, d) {
  var root = document.getElementById(id), steps = root.getElementsByClassName('tf-step'), i = 0;
  for (; i < steps.length; i++) { if (steps[i].style.display != 'none') break; }
  steps[i].style.display = 'none';
  i = Math.min(Math.max(i + d, 0), steps.length - 1);
  steps[i].style.display = 'block';
  root.getElementsByClassName('tf-pos')[0].textContent = (i + 1) + ' / ' + steps.length;
}
